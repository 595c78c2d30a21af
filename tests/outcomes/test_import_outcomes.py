"""Outcomes set after the import: SWE-agent and OpenHands traces imported with outcome unknown become
success or failure from a results file, all or nothing, through the service and the CLI."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.models import OutcomeImport
from annotator.outcomes.parse import OutcomeFileError
from annotator.outcomes.service import do_import_outcomes
from tests.factories import BatchFactory, ProjectFactory, TraceFactory
from tests.outcomes.conftest import outcomes_of
from traces.models import Trace

pytestmark = pytest.mark.django_db

REPORT = {
    "resolved_ids": ["django__django-11099", "astropy__astropy-12907"],
    "unresolved_ids": ["sympy__sympy-20590"],
    "error_ids": [],
    "empty_patch_ids": [],
}


def test_a_swebench_report_turns_unknown_outcomes_into_success_and_failure(coding_project, owner):
    result = do_import_outcomes(coding_project, json.dumps(REPORT).encode(), filename="run.json", actor=owner)
    assert (result.traces, result.changed, result.counts) == (3, 3, {"success": 2, "failure": 1})
    assert outcomes_of(coding_project) == {
        "django__django-11099": ("success", None),
        "astropy__astropy-12907": ("success", None),
        "sympy__sympy-20590": ("failure", None),
    }
    trace = Trace.objects.get(external_id="sympy__sympy-20590")
    assert trace.metadata["swebench_status"] == "unresolved"
    assert OutcomeImport.objects.get().created_by == owner


def test_a_csv_sets_scores_and_metadata(coding_project):
    data = (
        b"external_id,outcome,score,judge\ndjango__django-11099,failure,0.25,human\nsympy__sympy-20590,,1,\n"
    )
    do_import_outcomes(coding_project, data, filename="scores.csv")
    got = outcomes_of(coding_project)
    assert got["django__django-11099"] == ("failure", 0.25)
    assert got["sympy__sympy-20590"] == ("unknown", 1.0)  # no outcome given: left as it was
    assert Trace.objects.get(external_id="django__django-11099").metadata["judge"] == "human"


def test_one_bad_record_changes_nothing_and_is_named(coding_project):
    before = outcomes_of(coding_project)
    data = (
        b'{"external_id": "django__django-11099", "outcome": "success"}\n'
        b'{"external_id": "sympy__sympy-20590", "outcome": "resolved"}\n'
    )
    with pytest.raises(OutcomeFileError) as caught:
        do_import_outcomes(coding_project, data, filename="r.jsonl")
    assert caught.value.problems == [
        "line 2: outcome must be one of success, failure, unknown, not 'resolved'"
    ]
    assert outcomes_of(coding_project) == before and not OutcomeImport.objects.exists()


def test_an_external_id_of_another_project_is_unknown_here(coding_project, mast):
    other = ProjectFactory(taxonomy_version=mast, slug="other")
    foreign = TraceFactory(
        batch=BatchFactory(name="theirs"), external_id="requests__requests-2317", outcome="unknown"
    )
    other.batches.add(foreign.batch)
    data = b"external_id,outcome\ndjango__django-11099,success\nrequests__requests-2317,failure\n"
    with pytest.raises(OutcomeFileError) as caught:
        do_import_outcomes(coding_project, data, filename="r.csv")
    assert caught.value.problems == ["line 3: unknown external id 'requests__requests-2317' in this project"]
    assert Trace.objects.get(pk=foreign.pk).outcome == "unknown"
    assert outcomes_of(coding_project)["django__django-11099"][0] == "unknown"


def test_a_dry_run_says_what_would_change_and_changes_nothing(coding_project):
    result = do_import_outcomes(
        coding_project, json.dumps(REPORT).encode(), filename="run.json", dry_run=True
    )
    assert result.changed == 3 and "would change 3" in result.summary()
    assert {outcome for outcome, _ in outcomes_of(coding_project).values()} == {"unknown"}


def test_the_command_imports_and_reports(coding_project, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(REPORT))
    out = StringIO()
    call_command("import_outcomes", coding_project.slug, str(path), "--dry-run", stdout=out)
    assert out.getvalue().startswith("Dry run, nothing changed: 3 traces named")
    call_command("import_outcomes", coding_project.slug, str(path), stdout=out)
    assert outcomes_of(coding_project)["sympy__sympy-20590"][0] == "failure"


def test_a_folder_of_per_instance_reports_is_read_as_one_file(coding_project, tmp_path):
    """SWE-bench's harness writes one report.json per instance under logs/run_evaluation/...: the folder is
    one results file, all or nothing."""
    run = tmp_path / "logs" / "run_evaluation" / "my-run"
    for instance, resolved in (("django__django-11099", True), ("sympy__sympy-20590", False)):
        (run / instance).mkdir(parents=True)
        (run / instance / "report.json").write_text(json.dumps({instance: {"resolved": resolved}}))
        (run / instance / "run_instance.log").write_text("not a report")
    call_command("import_outcomes", coding_project.slug, str(tmp_path / "logs"), stdout=StringIO())
    outcomes = outcomes_of(coding_project)
    assert outcomes["django__django-11099"][0] == "success" and outcomes["sympy__sympy-20590"][0] == "failure"

    (run / "again").mkdir()
    (run / "again" / "report.json").write_text(json.dumps({"django__django-11099": {"resolved": False}}))
    with pytest.raises(
        CommandError,
        match=r"django__django-11099/report.json: record 'django__django-11099': .* given again "
        r"\(first: again/report.json",
    ):
        call_command("import_outcomes", coding_project.slug, str(tmp_path / "logs"))
    assert outcomes_of(coding_project)["django__django-11099"][0] == "success"


def test_the_command_names_the_bad_record_and_changes_nothing(coding_project, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("external_id,outcome,score\ndjango__django-11099,success,x\n")
    with pytest.raises(CommandError, match=r"line 2: score must be a number, not 'x'"):
        call_command("import_outcomes", coding_project.slug, str(path))
    assert outcomes_of(coding_project)["django__django-11099"] == ("unknown", None)
    with pytest.raises(CommandError, match="No project 'nope'"):
        call_command("import_outcomes", "nope", str(path))


def test_the_failure_signatures_see_the_new_outcomes_at_once(coding_project, annotator_a):
    from annotator.services.signatures import SignatureQuery
    from annotator.services.signatures import report as signature_report
    from tests.labels import submit

    for external_id in ("django__django-11099", "sympy__sympy-20590"):
        submit(coding_project, Trace.objects.get(external_id=external_id), annotator_a, {"FM-1.1": [1]})
    before = signature_report.build_report(coding_project, SignatureQuery("union")).signatures
    assert (before.n_unknown, before.n_failed, before.n_successful) == (2, 0, 0)
    do_import_outcomes(coding_project, json.dumps(REPORT).encode(), filename="run.json")
    after = signature_report.build_report(coding_project, SignatureQuery("union")).signatures
    assert (after.n_unknown, after.n_failed, after.n_successful) == (0, 1, 1)


def test_a_report_of_a_whole_run_applies_to_the_traces_this_project_holds_when_asked(
    coding_project, tmp_path
):
    whole_run = {**REPORT, "unresolved_ids": [*REPORT["unresolved_ids"], "pylint-dev__pylint-7080"]}
    data = json.dumps(whole_run).encode()
    with pytest.raises(OutcomeFileError, match="unknown external id 'pylint-dev__pylint-7080'"):
        do_import_outcomes(coding_project, data, filename="run.json")
    result = do_import_outcomes(coding_project, data, filename="run.json", ignore_unknown=True)
    assert (result.traces, result.skipped) == (
        3,
        1,
    ) and "1 ids this project does not hold skipped" in result.summary()
    assert outcomes_of(coding_project)["sympy__sympy-20590"][0] == "failure"
    path = tmp_path / "other.csv"
    path.write_text("external_id,outcome\nnot-here,success\n")
    with pytest.raises(CommandError, match="none of the file's ids is a trace of this project"):
        call_command("import_outcomes", coding_project.slug, str(path), "--ignore-unknown")
