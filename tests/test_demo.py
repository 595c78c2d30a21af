"""The `make run` demo: a newcomer's first look shows the whole loop, computed by the product's own verbs.

The seed runs as `make run` runs it: outside a test transaction (`transactional_db`), so the submits'
after-commit follow-ups (the adjudication check, the agreement report refresh) run as they do there.
"""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from annotator.models import (
    AdjudicationItem,
    AgreementReport,
    Annotation,
    Assignment,
    GoldHistory,
    GoldLabel,
    LabelApplication,
    LabelHistory,
    Project,
)
from annotator.models.jobs import JobStatus
from annotator.services.adjudication import queue_counts
from annotator.services.demo import DEMO_PROJECT, do_seed_demo
from annotator.services.reports import latest_report, report_is_current
from annotator.services.signatures import SignatureQuery
from annotator.services.signatures.report import build_report
from traces.models import Batch, Trace

pytestmark = pytest.mark.django_db(transaction=True)


def _seed(tmp_path) -> Project:
    do_seed_demo(n_traces=40, work_dir=tmp_path)
    return Project.objects.get(slug=DEMO_PROJECT)


def _text(html: str) -> str:
    """What the page reads as: tags gone, white space collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _state(project: Project) -> dict:
    """Everything the seed writes, as comparable values."""
    return {
        "traces": Trace.objects.count(),
        "batches": Batch.objects.count(),
        "assignments": sorted(
            Assignment.objects.filter(project=project).values_list("trace_id", "annotator_id", "status")
        ),
        "annotations": sorted(
            Annotation.objects.filter(assignment__project=project).values_list("id", "version", "status")
        ),
        "labels": LabelApplication.objects.count(),
        "history": LabelHistory.objects.count(),
        "items": sorted(
            AdjudicationItem.objects.filter(project=project).values_list("trace_id", "status", "version")
        ),
        "gold": sorted(GoldLabel.objects.values_list("item__trace_id", "mode__code", "source")),
        "gold_history": GoldHistory.objects.filter(project=project).count(),
        "reports": AgreementReport.objects.filter(project=project).count(),
    }


def test_every_page_of_the_loop_has_something_true_to_show(tmp_path, client):
    project = _seed(tmp_path)
    users = {m.user.username: m.user for m in project.memberships.select_related("user")}

    # Agreement: the report is computed, current, and compares alice with bob on every trace both labelled.
    report = latest_report(project, {})
    assert report.status == JobStatus.SUCCEEDED and report_is_current(project, report)
    (pair,) = report.results["pairs"]
    assert (pair["a"], pair["b"]) == ("alice", "bob") and pair["n_shared_items"] == 24
    assert 0 < pair["kappa_macro"]["value"] < 1  # mostly agreeing, not identical
    kappas = {m["code"]: m["cohen_kappa"]["value"] for m in pair["modes"]}
    assert kappas["FM-1.3"] is not None and kappas["FM-1.3"] < 1  # a judgement call they settle differently

    # Adjudication: agreements went to the gold, disagreements to the queue; carol decided some, not all.
    counts = queue_counts(project)
    assert counts["agreed"] > 0 and counts["open"] > 0 and counts["resolved"] > 0
    assert counts["open"] >= counts["resolved"]
    disputed = {code for item in AdjudicationItem.objects.filter(project=project) for code in item.disputed}
    assert {"FM-1.3", "FM-2.6"} <= disputed
    decided = GoldHistory.objects.filter(project=project, action=GoldHistory.Action.DECIDED)
    assert decided.count() == counts["resolved"] and {h.actor for h in decided} == {users["carol"]}
    assert all(h.after["decisions"] and h.after["decisions"][0]["reason_code"] for h in decided)
    assert GoldLabel.objects.filter(item__project=project, source=GoldLabel.Source.AGREED).exists()

    # Signatures (gold, the default source) have rows.
    signatures = build_report(project, SignatureQuery()).signatures
    assert signatures is not None and signatures.n_traces == counts["agreed"] + counts["resolved"]
    overall = signatures.prevalence_by("all").groups[0]
    assert any(rate.count for rate in overall.modes)

    # Work is left: both annotators still have open traces, bob more (alice's extra ones wait for him).
    left = {
        name: Assignment.objects.open_for(users[name]).work().filter(project=project).count()
        for name in ("alice", "bob")
    }
    assert 0 < left["alice"] < left["bob"]

    # No model opinions were invented: the LLM agreement has no rater to show.
    assert not project.llm_runs.exists()
    assert not Annotation.objects.filter(
        assignment__project=project, assignment__annotator__rater__kind="llm"
    )

    # The pages say so to the owner who opens them first.
    client.force_login(users["owner"])
    pages = {
        name: _text(client.get(f"/p/{project.slug}/{name}/").content.decode())
        for name in ("agreement", "adjudication", "signatures")
    }
    assert "50 submitted annotations" in pages["agreement"] and "Recompute" in pages["agreement"]
    assert f"{counts['open']} open" in pages["adjudication"] and "Decide" in pages["adjudication"]
    assert "traces analysed" in pages["signatures"] and "No gold labels yet" not in pages["signatures"]

    # Seeding again (the next `make run`) changes nothing.
    before = _state(project)
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert _state(project) == before
    assert "already there" in out.getvalue() and f"{counts['resolved']} decided" in out.getvalue()


def test_the_labels_went_through_the_annotators_own_saves(tmp_path):
    project = _seed(tmp_path)
    submitted = Annotation.objects.filter(assignment__project=project).select_related("assignment__annotator")
    assert submitted.count() == 50 and {a.status for a in submitted} == {Annotation.Status.SUBMITTED}
    for annotation in submitted:
        history = list(LabelHistory.objects.filter(annotation=annotation).order_by("id"))
        # The page's path: a draft first (autosave), then the submission, each by the annotator.
        assert [h.action for h in history] == ["create", "submit"]
        assert {h.actor_id for h in history} == {annotation.assignment.annotator_id}
    labels = LabelApplication.objects.filter(annotation__assignment__project=project)
    assert labels.exists()
    for label in labels.select_related("annotation__assignment__trace"):
        steps = [item["step"] for item in label.evidence]
        step_count = label.annotation.assignment.trace.step_count
        assert steps and all(0 <= step < step_count for step in steps)
    # Traces with no symptom are said to have none, explicitly.
    assert submitted.filter(no_failure=True).exists()


def test_a_demo_people_already_work_in_is_not_labelled_again(tmp_path):
    """A demo seeded before it came labelled, in which someone has started: the seed leaves it alone."""
    from annotator.services import demo

    project, _ = demo._seed_project(n_traces=10, work_dir=tmp_path)
    alice = project.memberships.get(user__username="alice").user
    assignment = Assignment.objects.open_for(alice).work().filter(project=project).first()
    Annotation.objects.create(assignment=assignment, version=1)
    do_seed_demo(n_traces=10, work_dir=tmp_path)
    assert Annotation.objects.filter(assignment__project=project).count() == 1
    assert not AdjudicationItem.objects.filter(project=project).exists()
