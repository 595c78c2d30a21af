"""After an LLM run the model is measured like a rater: in the project's agreement report (vs each human),
and against gold (annotator.services.llm.agreement), with numbers matching scikit-learn."""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem, GoldLabel
from annotator.services.label_import import IncomingAnnotation, do_import_annotations
from annotator.services.llm.agreement import llm_agreement
from annotator.services.llm.runs import do_process_run, do_start_run
from annotator.services.reports import do_compute_report, do_request_report
from taxonomy.models import FailureMode
from tests.factories import trace_with_steps
from tests.llm.fake_server import answer
from traces.importers.records import AnnotationRecord, LabelRecord

# Per trace: which modes the LLM, Ana, Ben and the gold labels chose.
LLM = [{"FM-1.3"}, {"FM-1.3"}, set(), {"FM-1.1"}, {"FM-1.3", "FM-1.1"}, set()]
ANA = [{"FM-1.3"}, set(), set(), {"FM-1.1"}, {"FM-1.3"}, {"FM-1.1"}]
BEN = [{"FM-1.3"}, {"FM-1.3"}, {"FM-1.1"}, {"FM-1.1"}, {"FM-1.3", "FM-1.1"}, set()]
GOLD = [{"FM-1.3"}, {"FM-1.3"}, set(), {"FM-1.1"}, {"FM-1.3"}, {"FM-1.1"}]


@pytest.fixture
def labelled(project, batch, llm_config, chat_server, clock, annotator_a, annotator_b):
    traces = [trace_with_steps(4, batch=batch) for _ in LLM]
    for user, sets in ((annotator_a, ANA), (annotator_b, BEN)):
        do_import_annotations(
            project,
            [IncomingAnnotation(trace, AnnotationRecord(user.username, [LabelRecord(code, [0]) for code in sorted(chosen)], no_failure=not chosen))
             for trace, chosen in zip(traces, sets, strict=True)],
            rater_map={user.username: user.username},  # labels of the project's own annotators
        )  # fmt: skip
    modes = {mode.code: mode for mode in FailureMode.objects.filter(version=project.taxonomy_version)}
    for trace, chosen in zip(traces, GOLD, strict=True):
        item = AdjudicationItem.objects.create(project=project, trace=trace, status="resolved")
        GoldLabel.objects.bulk_create(
            GoldLabel(item=item, mode=modes[code], source="adjudicator") for code in chosen
        )
    chat_server.push(
        *[
            answer({"modes": {code: {"present": True, "steps": [1], "reason": "r"} for code in chosen}})
            for chosen in LLM
        ]
    )
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    assert do_process_run(run.pk, sleep=clock.sleep, clock=clock).run.done == len(LLM)
    return traces


def kappa(a_sets, b_sets, code):
    from sklearn.metrics import cohen_kappa_score

    return cohen_kappa_score([code in s for s in a_sets], [code in s for s in b_sets])


def test_the_agreement_report_lists_the_llm_as_a_rater_with_per_mode_kappa_against_each_human(
    project, labelled, settings
):
    settings.AGREEMENT_BOOTSTRAP = settings.AGREEMENT_PAIR_BOOTSTRAP = 50
    report = do_compute_report(do_request_report(project, {}, enqueue=False).pk)
    assert report.status == "succeeded", report.error
    raters = {rater["username"]: rater for rater in report.results["raters"]}
    assert set(raters) == {"ana-annotator", "ben-annotator", "llm:qwen2.5-7b"}
    for human, sets in (("ana-annotator", ANA), ("ben-annotator", BEN)):
        pair = next(p for p in report.results["pairs"] if {p["a"], p["b"]} == {human, "llm:qwen2.5-7b"})
        assert pair["n_shared_items"] == len(LLM)
        fm13 = next(mode for mode in pair["modes"] if mode["code"] == "FM-1.3")
        assert fm13["cohen_kappa"]["value"] == pytest.approx(kappa(LLM, sets, "FM-1.3"), abs=1e-9)


def test_llm_vs_each_human_and_vs_gold_per_mode_with_intervals(project, labelled):
    [entry] = llm_agreement(project, n_boot=50)
    assert entry["rater"] == "llm:qwen2.5-7b" and entry["n_items"] == len(LLM)
    by_other = {c["against"]: c for c in entry["comparisons"]}
    assert {c["kind"] for c in entry["comparisons"]} == {"human", "gold"}
    for name, sets in (("ana-annotator", ANA), ("ben-annotator", BEN), ("(gold)", GOLD)):
        comparison = by_other[name]
        assert comparison["n_items"] == len(LLM)
        for code in ("FM-1.1", "FM-1.3"):
            row = next(mode for mode in comparison["modes"] if mode["code"] == code)
            assert row["cohen_kappa"]["value"] == pytest.approx(kappa(LLM, sets, code), abs=1e-9)
            assert row["kappa_ci"]["n_resamples"] == 50
    never = next(mode for mode in by_other["(gold)"]["modes"] if mode["code"] == "FM-2.2")
    assert never["cohen_kappa"]["value"] is None and never["cohen_kappa"]["undefined_reason"]


def test_the_page_shows_the_llm_against_humans_and_gold(client, project, owner, labelled):
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/llm/agreement/", HTTP_HX_REQUEST="true").content.decode()
    assert (
        'id="llm-agreement"' in html
        and "llm:qwen2.5-7b" in html
        and "gold labels" in html
        and "ana-annotator" in html
    )
    body = client.get(f"/api/projects/{project.slug}/llm-agreement/").json()
    assert body["raters"][0]["rater"] == "llm:qwen2.5-7b"


def test_without_llm_labels_the_agreement_section_says_so(client, project, owner):
    client.force_login(owner)
    assert "No LLM rater has labelled" in client.get(f"/p/{project.slug}/llm/agreement/").content.decode()


def test_an_annotation_submitted_while_the_comparison_reads_is_left_for_the_next_one(
    project, labelled, batch, annotator_a, monkeypatch
):
    """The audit's KeyError race: labels read after the annotation rows include an annotation submitted in
    between. The comparison must go on without it, not answer 500."""
    from annotator.models import Annotation, Assignment, LabelApplication
    from annotator.services.llm import agreement as module

    late_trace = trace_with_steps(3, batch=batch)
    real = LabelApplication.objects

    class SubmittedMeanwhile:
        def filter(self, **kwargs):
            slot = Assignment.objects.create(project=project, trace=late_trace, annotator=annotator_a)
            annotation = Annotation.objects.create(
                assignment=slot, status="submitted", submitted_at=slot.created_at
            )
            mode = FailureMode.objects.get(version=project.taxonomy_version, code="FM-1.1")
            LabelApplication.objects.create(annotation=annotation, mode=mode)
            return real.filter(**kwargs)

    monkeypatch.setattr(module, "LabelApplication", type("Racing", (), {"objects": SubmittedMeanwhile()}))
    [entry] = llm_agreement(project, n_boot=20)
    by_other = {c["against"]: c for c in entry["comparisons"]}
    assert by_other["ana-annotator"]["n_items"] == len(LLM)  # the late annotation waits for the next run
