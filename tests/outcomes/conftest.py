"""A project holding a SWE-agent run and an OpenHands run, imported as their files come: outcome unknown."""

from __future__ import annotations

import json

import pytest

from annotator.services.imports import do_import_traces
from traces.models import Trace

SWE_AGENT_IDS = ("django__django-11099", "sympy__sympy-20590")
OPENHANDS_IDS = ("astropy__astropy-12907",)


def _swe_agent(instance: str) -> str:
    return json.dumps(
        {
            "trajectory": [
                {
                    "thought": "Look at the validator",
                    "action": "open django/core/validators.py",
                    "observation": "...",
                },
                {
                    "thought": "Fix the regex",
                    "action": "edit 1:2\nr'\\A[\\w.@+-]+\\Z'\nend_of_edit",
                    "observation": "ok",
                },
            ],
            "info": {"exit_status": "submitted", "submission": "diff --git a/x b/x"},
        }
    )


def _openhands() -> str:
    return json.dumps(
        [
            {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix separability_matrix"}},
            {"id": 1, "source": "agent", "action": "run", "args": {"command": "pytest astropy/modeling"}},
            {"id": 2, "source": "environment", "observation": "run", "content": "1 failed", "cause": 1},
        ]
    )


@pytest.fixture
def coding_project(project, owner, tmp_path):
    files = []
    for instance in SWE_AGENT_IDS:
        path = tmp_path / f"{instance}.traj"
        path.write_text(_swe_agent(instance))
        files.append((path, path.name))
    for instance in OPENHANDS_IDS:
        path = tmp_path / f"{instance}.json"
        path.write_text(_openhands())
        files.append((path, path.name))
    do_import_traces(files[:2], batch_name="swe-agent-run", user=owner, project=project)
    do_import_traces(files[2:], batch_name="openhands-run", user=owner, project=project)
    outcomes = dict(Trace.objects.in_project(project).values_list("external_id", "outcome"))
    assert outcomes == dict.fromkeys((*SWE_AGENT_IDS, *OPENHANDS_IDS), "unknown")
    return project


def outcomes_of(project) -> dict[str, tuple[str, float | None]]:
    return {
        external_id: (outcome, score)
        for external_id, outcome, score in Trace.objects.in_project(project).values_list(
            "external_id", "outcome", "score"
        )
    }
