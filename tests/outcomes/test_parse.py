"""Results files to records, without a database: the shapes SWE-bench writes, CSV and JSONL, and what is
wrong with a bad record, by line or record."""

from __future__ import annotations

import json

import pytest

from annotator.outcomes.parse import MAX_BYTES, OutcomeFileError, parse_outcomes

# The shape of SWE-bench's harness run report (swebench/harness/reporting.py make_run_report).
RUN_REPORT = {
    "total_instances": 2294,
    "submitted_instances": 4,
    "completed_instances": 3,
    "resolved_instances": 1,
    "unresolved_instances": 1,
    "empty_patch_instances": 1,
    "error_instances": 1,
    "completed_ids": ["a__a-1", "b__b-2", "c__c-3"],
    "incomplete_ids": ["e__e-5"],
    "empty_patch_ids": ["c__c-3"],
    "submitted_ids": ["a__a-1", "b__b-2", "c__c-3", "d__d-4"],
    "resolved_ids": ["a__a-1"],
    "unresolved_ids": ["b__b-2"],
    "error_ids": ["d__d-4"],
    "schema_version": 2,
}


def test_it_reads_a_swebench_run_report():
    parsed = parse_outcomes(json.dumps(RUN_REPORT).encode(), "gpt-4o.run1.json")
    assert parsed.format == "swebench-report"
    got = {r.external_id: (r.outcome, r.metadata["swebench_status"]) for r in parsed.records}
    assert got == {
        "a__a-1": ("success", "resolved"),
        "b__b-2": ("failure", "unresolved"),
        "c__c-3": ("failure", "empty_patch"),
        "d__d-4": ("failure", "error"),
    }  # e__e-5 was never evaluated: left as it is


def test_it_reads_swebench_per_instance_reports():
    report = {
        "django__django-11099": {
            "patch_is_None": False,
            "patch_exists": True,
            "resolved": True,
            "tests_status": {"FAIL_TO_PASS": {"success": ["t"], "failure": []}},
        },
        "sympy__sympy-20590": {"patch_exists": True, "resolved": False},
    }
    parsed = parse_outcomes(json.dumps(report).encode(), "report.json")
    assert parsed.format == "swebench-instances"
    first, second = parsed.records
    assert (first.outcome, second.outcome) == ("success", "failure")
    assert first.metadata == {"patch_is_None": False, "patch_exists": True}


def test_extra_csv_columns_become_metadata_and_blank_cells_change_nothing():
    parsed = parse_outcomes(b"external_id,outcome,score,judge\nt1,Success,0.75,gpt-4o\nt2,,,\n", "r.csv")
    first, second = parsed.records
    assert (first.outcome, first.score, first.metadata) == ("success", 0.75, {"judge": "gpt-4o"})
    assert (second.outcome, second.score, second.metadata) == (None, None, {})


def test_jsonl_records_merge_their_metadata_object():
    data = (
        b'{"external_id": "t1", "outcome": "failure", "score": 0, "metadata": {"cost": 1.5}, "run": "r7"}\n'
    )
    (record,) = parse_outcomes(data, "r.jsonl").records
    assert (record.outcome, record.score, record.metadata) == ("failure", 0.0, {"cost": 1.5, "run": "r7"})


@pytest.mark.parametrize(
    ("data", "name", "problem"),
    [
        (
            b"external_id,outcome\nt1,success\nt2,passed\n",
            "r.csv",
            "line 3: outcome must be one of success, failure, unknown, not 'passed'",
        ),
        (
            b'{"external_id": "t1", "score": "high"}\n',
            "r.jsonl",
            "line 1: score must be a number, not 'high'",
        ),
        (b'{"external_id": "t1", "score": NaN}\n', "r.jsonl", "line 1: not valid JSON"),
        (b"external_id,score\nt1,inf\n", "r.csv", "line 2: score must be a finite number"),
        (b"id,outcome\nt1,success\n", "r.csv", "line 1: the header needs an `external_id` column"),
        (
            b"external_id,outcome\nt1,success\nt1,failure\n",
            "r.csv",
            "line 3: 't1' is given again (first: line 2)",
        ),
        (
            b'{"resolved_ids": ["a"], "unresolved_ids": ["a"]}',
            "r.json",
            "unresolved_ids[1]: 'a' is also in resolved_ids",
        ),
        (b"[" * 100 + b"]" * 100, "r.json", "nested deeper than"),
        (b"\xff\xfe", "r.csv", "not UTF-8"),
    ],
)
def test_a_bad_record_is_named_with_why(data, name, problem):
    with pytest.raises(OutcomeFileError) as caught:
        parse_outcomes(data, name)
    assert any(problem in found for found in caught.value.problems), caught.value.problems


def test_a_file_past_the_size_limit_is_refused_unread():
    with pytest.raises(OutcomeFileError, match="at most"):
        parse_outcomes(b" " * (MAX_BYTES + 1), "r.csv")
