"""SWE-agent .traj files: thought / action / observation per trajectory entry."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces import services
from traces.importers import detect_format, iter_records, swe_agent
from traces.importers.records import TraceFormatError

# file stem -> (trajectory entries, steps, model). Steps = 3 per entry, except BabyEncryption where
# 2 thoughts are blank and produce no reasoning step (16 * 3 - 2 = 46).
EXPECTED = {
    "6e44b9__sweagenttestrepo-1c2844": (5, 15, "gpt-4o"),
    "pydicom__pydicom-1458": (12, 36, ""),
    "BabyEncryption": (16, 46, ""),
    "humanevalfix-python-0": (5, 15, ""),
    "marshmallow-code__marshmallow-1867": (11, 33, "gpt-4o"),
}


@pytest.fixture(scope="module")
def files(datasets_dir: Path) -> list[Path]:
    return sorted(need(datasets_dir / "swe_agent").rglob("*.traj"))


def test_each_file(files: list[Path]):
    assert sorted(p.stem for p in files) == sorted(EXPECTED)
    for path in files:
        assert detect_format(path) == "swe_agent"
        (rec,) = iter_records(path)
        entries, steps, model = EXPECTED[path.stem]
        assert len(rec.steps) == steps, path.stem
        assert sum(s.kind == "tool_call" for s in rec.steps) == entries
        assert rec.model == model and rec.system == "SWE-agent"
        # All shipped runs are "submitted" and unevaluated: the documented rule gives unknown.
        assert rec.outcome == "unknown" and rec.metadata["exit_status"] == "submitted"
        for s in rec.steps:
            if s.kind == "observation":
                assert rec.steps[s.parent].kind == "tool_call"
        assert rec.task


def test_details_of_the_function_calling_run(files: list[Path]):
    path = next(p for p in files if p.stem.startswith("6e44b9"))
    (rec,) = iter_records(path)
    assert [s.kind for s in rec.steps[:3]] == ["reasoning", "tool_call", "observation"]
    assert rec.steps[1].duration_ms is not None
    assert rec.metadata["model_stats"]["api_calls"] == 5


@pytest.mark.parametrize(
    ("info", "outcome"),
    [
        ({"exit_status": "submitted", "resolved": True}, "success"),
        ({"exit_status": "submitted (exit_cost)", "submission": "diff"}, "unknown"),
        ({"exit_status": "exit_format"}, "failure"),
        ({"exit_status": "submitted", "score": 0.0}, "failure"),
    ],
)
def test_outcome_rule(info: dict, outcome: str):
    assert swe_agent.outcome_of(info)[0] == outcome


def test_truncated_and_corrupted(files: list[Path], tmp_path: Path):
    cut = truncate(files[0], tmp_path / "cut.traj")
    with pytest.raises(TraceFormatError, match=r"cut\.traj, record 1: malformed JSON"):
        list(iter_records(cut))
    doc = {"trajectory": [{"thought": "t", "action": "ls", "observation": ""}, {"thought": 5}], "info": {}}
    with pytest.raises(TraceFormatError, match=r"x\.traj, record 1, field 'trajectory\[1\]\.thought'"):
        list(swe_agent.parse(io.BytesIO(json.dumps(doc).encode()), "x.traj"))


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (["ls"], "trajectory[1]", "expected an object, got list"),
        ({"thought": 5, "action": "ls"}, "trajectory[1].thought", "expected a string, got integer"),
        ({"thought": "t", "action": ["ls"]}, "trajectory[1].action", "expected a string, got list"),
        ({"thought": "t", "action": True}, "trajectory[1].action", "expected a string, got boolean"),
    ],
)
def test_an_entry_of_the_wrong_shape_is_named_by_its_field(entry, field: str, message: str):
    doc = {"trajectory": [{"thought": "t", "action": "ls", "observation": ""}, entry], "info": {}}
    with pytest.raises(TraceFormatError) as error:
        list(swe_agent.parse(io.BytesIO(json.dumps(doc).encode()), "x.traj"))
    assert f"field '{field}'" in str(error.value) and message in str(error.value)


def test_null_text_is_empty_and_a_numeric_time_of_any_form_is_kept():
    doc = {
        "trajectory": [
            {"thought": None, "action": None, "observation": None, "execution_time": "0.5"},
            {"thought": "look", "action": "  cat   a.py ", "observation": ["x", "y"], "execution_time": 2},
        ],
        "info": {},
    }
    (rec,) = swe_agent.parse(io.BytesIO(json.dumps(doc).encode()), "x.traj")
    assert [(s.kind, s.content, s.tool_name, s.duration_ms) for s in rec.steps] == [
        ("tool_call", "", "", 500),
        ("observation", "", "", None),
        ("reasoning", "look", "", None),
        ("tool_call", "  cat   a.py ", "cat", 2000),
        ("observation", "x\ny", "", None),
    ]
    assert rec.steps[4].parent == 3


def _run_folder(tmp_path: Path, text: str) -> list[tuple]:
    """The events of one .traj file read as an import's worker reads a short run: from its head."""
    from traces import import_pool

    path = tmp_path / "run.traj"
    path.write_text(text)
    return import_pool.run_files([(0, path, "run.traj")], None, False)


def test_a_run_read_from_its_head_gives_the_record_a_fresh_parse_gives(tmp_path: Path):
    doc = {
        "trajectory": [{"thought": "t", "action": "ls -a", "observation": "x"}],
        "info": {"exit_status": "x"},
    }
    events = _run_folder(tmp_path, json.dumps(doc) + "\n")
    assert [e[0] for e in events] == ["file", "trace", "end"]
    (fresh,) = swe_agent.parse(io.BytesIO(json.dumps(doc).encode()), "run.traj")
    assert events[1][2].digest == services.content_hash(fresh)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"trajectory": [], "info": {}}\r{"trajectory": []}', "malformed JSON"),  # two values, one line
        ('{"trajectory": [], "info": ' + "[" * 150 + "]" * 150 + "}", "nested deeper than 100 levels"),
    ],
)
def test_a_run_the_sniffers_parsed_is_still_checked_whole(tmp_path: Path, text: str, message: str):
    events = _run_folder(tmp_path, text)
    assert events[-1][0] == "error" and message in events[-1][2]
