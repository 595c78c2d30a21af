"""The pure parts import with Django and Celery absent, so they can be tested and benchmarked alone.

Each import runs in a fresh interpreter whose import system refuses `django`, `celery` and `kombu`: an
import that reaches either (directly, or through `annotator/__init__.py`) fails the test with its name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PURE_MODULES = [
    "annotator.agreement.stats",
    "annotator.agreement.report",
    "annotator.agreement.paper",
    "annotator.agreement.calibration",
    "annotator.signatures",
    "annotator.llm.parse",
    "annotator.llm.prompt",
    "annotator.llm.windows",
    "annotator.assignment_strategy",
    "annotator.demo_readings",
    "annotator.triage",
    "annotator.triage.signals",
    "annotator.triage.curve",
    "annotator.search",
    "annotator.search.filters",
    "annotator.similar",
    "annotator.similar.vectors",
    "annotator.outcomes",
    "annotator.outcomes.parse",
    "traces.importers",
    "traces.render",
    "taxonomy.schema",
]

_BLOCKED_IMPORT = """
import importlib, importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"django", "celery", "kombu"}:
            raise ImportError(f"{name} is blocked: this module must not need Django or Celery")

sys.meta_path.insert(0, Blocked())
importlib.import_module(sys.argv[1])
"""


@pytest.mark.parametrize("module", PURE_MODULES)
def test_it_imports_without_django_or_celery(module):
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_IMPORT, module],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"importing {module} needs Django or Celery:\n{done.stderr[-2000:]}"


def test_the_package_itself_imports_nothing():
    """`celery -A annotator.celery`: the app is loaded by the app config, never by `import annotator`."""
    tree = ast.parse((ROOT / "annotator" / "__init__.py").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]
