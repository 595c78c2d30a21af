"""Tasks import services, never the reverse: no service imports `annotator.tasks`, and no import hides
inside a function to break a cycle between services (they enqueue by task name, annotator.services.enqueue).
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "annotator" / "services"


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name


def test_no_service_imports_the_tasks():
    offenders = [
        f"{path.relative_to(SERVICES)}:{node.lineno}"
        for path in SERVICES.rglob("*.py")
        for node, module in _imports(ast.parse(path.read_text()))
        if module.startswith("annotator.tasks")
    ]
    assert offenders == []


def test_no_service_imports_inside_a_function():
    offenders = []
    for path in SERVICES.rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            offenders += [
                f"{path.relative_to(SERVICES)}:{node.lineno} {module}"
                for node, module in _imports(function)
                if module.startswith(("annotator.services", "annotator.tasks"))
            ]
    assert offenders == []
