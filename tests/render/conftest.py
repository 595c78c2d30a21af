"""A SWE-agent run that edits a file, imported the way a user imports one, assigned to an annotator."""

from __future__ import annotations

import json

import pytest

HOSTILE = "<script>alert(1)</script></pre>\x1b[31m"
TRAJECTORY = {
    "environment": "swe_main",
    "trajectory": [
        {
            "thought": "Let me fix the sign in add().",
            "action": "str_replace_editor str_replace /testbed/calc.py   --old_str 'def add(a, b):\n"
            "    return a - b' --new_str 'def add(a, b):\n    return a + b'",
            "observation": "The file /testbed/calc.py has been edited.",
        },
        {
            "thought": "Now a script to check it.",
            "action": f"cat > check.sh <<'EOF'\nset -e\npython -c 'import calc; assert calc.add(1, 2) == 3'\n"
            f"echo '{HOSTILE}'\nEOF",
            "observation": "",
        },
        {
            "thought": "Submit.",
            "action": "submit",
            "observation": "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
            " def add(a, b):\n-    return a - b\n+    return a + b\n",
        },
    ],
    "history": [{"role": "user", "content": "add() subtracts."}],
    "info": {"exit_status": "submitted"},
}


@pytest.fixture
def swe_world(tmp_path):
    """(project, trace, annotator assignment) for one imported SWE-agent run."""
    from annotator.models import Assignment, Membership, Project
    from annotator.services.assignment import do_assign
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from tests.factories import UserFactory
    from traces.services import do_import_files

    path = tmp_path / "calc-fix.traj"
    path.write_text(json.dumps(TRAJECTORY), encoding="utf-8")
    load_builtin_taxonomies()
    result = do_import_files([(path, path.name)], batch_name="swe-shapes")
    project = Project.objects.create(slug="swe", name="SWE study", taxonomy_version=resolve_version("mast"))
    project.batches.add(result.batch)
    coder = UserFactory(username="coder")
    Membership.objects.create(project=project, user=coder, role="annotator")
    do_assign(project)
    trace = result.batch.traces.get()
    return project, trace, Assignment.objects.get(project=project, annotator=coder)
