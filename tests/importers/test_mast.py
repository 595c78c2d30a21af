"""MAST: the human-labelled file (real) and the full MAD shape (synthetic), plus the splitters."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, iter_records, mast_full, mast_labelled
from traces.importers.mast_split import guess_framework, split_trace
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import synthetic_traces, write_mast_full_json

LABELLED = "mast/MAD_human_labelled_dataset.json"

# Steps per record (trace_id order), each checked against an independent grep of the raw log:
# AppWorld = speaker/Code/Evaluation/Task headers (Entering/Exiting loop lines excluded);
# HyperAgent = "HyperAgent_<id> - LEVEL - " lines; AG2 = trajectory messages; ChatDev =
# "[date LEVEL]" headers minus flask/HTTP/usage noise; MetaGPT = loguru lines or FROM/NEW MESSAGES
# blocks; Magentic-One = 13 "---------- X ----------" headers + the setup preamble; OpenManus =
# 188 loguru records - 111 bookkeeping ones (token usage, step counters, tool preparation) + preamble.
STEPS = [31, 180, 10, 85, 5, 75, 20, 4, 85, 5, 525, 70, 8, 87, 5, 96, 6, 14, 78]
SYSTEMS = (
    ["AppWorld", "HyperAgent", "AG2", "ChatDev", "MetaGPT"] * 2
    + ["HyperAgent", "AppWorld", "AG2", "ChatDev", "MetaGPT"]
    + ["ChatDev", "MetaGPT", "Magentic-One", "OpenManus"]
)


@pytest.fixture(scope="module")
def labelled(datasets_dir: Path) -> list:
    return list(iter_records(need(datasets_dir / LABELLED)))


def test_labelled_counts_systems_and_steps(labelled: list, datasets_dir: Path):
    assert detect_format(datasets_dir / LABELLED) == "mast_labelled"
    assert len(labelled) == 19
    assert [len(r.steps) for r in labelled] == STEPS
    assert sum(STEPS) == 1389
    assert [r.system for r in labelled] == SYSTEMS
    # Records 17 and 18 have mas_name/benchmark_name swapped in the source; the benchmark is GAIA.
    assert [r.benchmark for r in labelled[17:]] == ["GAIA", "GAIA"]
    assert labelled[17].metadata["mas_name"] == "GAIA"
    rounds = Counter(r.metadata["round"] for r in labelled)
    assert rounds == {"Round 1": 5, "Round 2": 5, "Round 3": 5, "Generlazability": 4}


def test_labelled_annotators_and_labels(labelled: list):
    assert all(
        [a.annotator for a in r.annotations] == ["annotator_1", "annotator_2", "annotator_3"]
        for r in labelled
    )
    # Positive votes counted in the file: annotator_1 60, annotator_2 50, annotator_3 56.
    per = Counter()
    for r in labelled:
        for a in r.annotations:
            per[a.annotator] += len(a.labels)
    assert per == {"annotator_1": 60, "annotator_2": 50, "annotator_3": 56}
    first = labelled[0].annotations[0]
    assert [lab.mode for lab in first.labels] == [
        "1.5 Unaware of stopping conditions",
        "3.3 Ignoring suggestions from agents",
    ]
    # Mode lists per round: 18 (old taxonomy), 17, 17, and the final 14-mode MAST.
    assert [len(r.metadata["failure_modes"]) for r in labelled[::5]] == [18, 17, 17, 14]
    final = labelled[17].annotations[0]
    assert [lab.mode for lab in final.labels] == [
        "1.1 Disobey Task Specification",
        "3.2 No or Incomplete Verification",
        "3.3 Incorrect Verification",
    ]


def test_labelled_nan_votes_are_not_guessed(labelled: list):
    last = labelled[18]
    a1, _a2, a3 = last.annotations
    assert a1.no_failure and not a1.labels
    # annotator_3 has bare NaN for two modes: not "no failure", and the note says which.
    assert not a3.no_failure and not a3.labels
    assert a3.note.startswith("no value in the source for: ") and a3.note.count(";") == 1


def test_labelled_outcomes_tasks_and_timestamps(labelled: list):
    assert Counter(r.outcome for r in labelled) == {"unknown": 13, "failure": 4, "success": 2}
    assert labelled[0].task.startswith("Give a 5-star rating")
    assert labelled[3].task.startswith("Develop a classic Sudoku")
    # ChatDev logs dates as %Y-%d-%m ("2025-17-01"); steps carry real ISO dates.
    assert labelled[3].steps[0].timestamp == "2025-01-17T11:36:43"
    # AppWorld nested agent turns point at the supervisor step that opened the loop.
    nested = [s for s in labelled[0].steps if s.parent is not None]
    assert nested and all(labelled[0].steps[s.parent].parent is None for s in nested)
    manus = labelled[18]
    results = [s for s in manus.steps if s.kind == "tool_result"]
    assert len(results) == 18 and all(manus.steps[s.parent].tool_name == s.tool_name for s in results)
    json.dumps([r.metadata for r in labelled])


def test_labelled_truncated(datasets_dir: Path, tmp_path: Path):
    cut = truncate(need(datasets_dir / LABELLED), tmp_path / "mast.json")
    with pytest.raises(TraceFormatError) as err:
        list(iter_records(cut, "mast_labelled"))
    assert str(err.value).startswith(f"{cut}, record ") and "malformed JSON" in str(err.value)


def test_labelled_corrupted_vote_names_field():
    doc = [
        {
            "round": "R",
            "mas_name": "AG2",
            "trace_id": 0,
            "trace": "x",
            "annotations": [
                {"failure mode": "1.1 A\n\nB", "annotator_1": True},
                {"failure mode": "1.2 C", "annotator_1": "maybe"},
            ],
        }
    ]
    with pytest.raises(TraceFormatError, match=r"m\.json, record 1, field 'annotations\[1\]\.annotator_1'"):
        list(mast_labelled.parse(io.BytesIO(json.dumps(doc).encode()), "m.json"))


def test_full_mad_synthetic_with_nan(tmp_path: Path):
    recs = list(synthetic_traces(30, steps=8, seed=11))
    path = tmp_path / "MAD_full_dataset.json"
    write_mast_full_json(recs, path)
    assert "NaN" in path.read_text()
    assert detect_format(path) == "mast_full"
    parsed = list(iter_records(path))
    assert len(parsed) == 30
    assert all(len(p.steps) == 8 and p.system == "Magentic-One" and p.benchmark == "GAIA" for p in parsed)
    for orig, got in zip(recs, parsed, strict=True):
        (ann,) = got.annotations
        assert ann.annotator == "mast-llm-judge"
        want = sorted({lab.mode for a in orig.annotations for lab in a.labels})
        assert sorted(lab.mode for lab in ann.labels) == want
        assert ann.no_failure == (not want)
        assert got.model == orig.model and got.external_id.startswith("Magentic_GAIA_")


def test_full_mad_jsonl_and_bad_annotation():
    line = {
        "mas_name": "AG2",
        "llm_name": "gpt-4o",
        "benchmark_name": "GSM",
        "trace_id": 3,
        "trace": {
            "trajectory": (
                "content: hi\nrole: user\nname: mathproxyagent\n"
                "content: 4\nrole: assistant\nname: assistant\n"
            )
        },
        "mast_annotation": {"1.1": 1, "2.2": 0},
    }
    (rec,) = mast_full.parse(io.BytesIO((json.dumps(line) + "\n").encode()), "mad.jsonl")
    assert [(s.agent, s.content) for s in rec.steps] == [("mathproxyagent", "hi"), ("assistant", "4")]
    assert [lab.mode for lab in rec.annotations[0].labels] == ["1.1"]
    line["mast_annotation"]["2.2"] = "sometimes"
    with pytest.raises(TraceFormatError, match=r"mad\.jsonl, line 1, field 'mast_annotation\.2\.2'"):
        list(mast_full.parse(io.BytesIO((json.dumps(line) + "\n").encode()), "mad.jsonl"))


def test_splitters_by_framework_and_fallback():
    magentic = (
        "---------- TextMessage (user) ----------\nQ?\n---------- TextMessage (WebSurfer) ----------\nA"
    )
    steps, _, fw = split_trace(magentic)
    assert fw == "Magentic-One" and [s.agent for s in steps] == ["user", "WebSurfer"]
    chatdev = (
        "[2025-03-02 10:00:00 INFO] Programmer: **hello**\n\ncode\n"
        "[2025-03-02 10:00:01 INFO] flask app.py did not start for online log\n"
    )
    steps, _, fw = split_trace(chatdev, "ChatDev")
    assert len(steps) == 1 and steps[0].agent == "Programmer" and steps[0].timestamp == "2025-02-03T10:00:00"
    assert guess_framework("nothing recognisable") == ""
    steps, _, fw = split_trace("Alice (to Bob):\nhi\n\nBob (to Alice):\nhello\n")
    assert fw == "" and [s.agent for s in steps] == ["Alice", "Bob"]
    steps, _, _ = split_trace("one block only")
    assert [s.content for s in steps] == ["one block only"]
