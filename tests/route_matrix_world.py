"""The world of the route matrix (tests/test_route_matrix.py): one project with every persona of its table
and the blind marks it looks for. The routes and the answers each persona expects stay in the matrix's
ROUTES table; this module only builds what those requests need (objects, and the URL arguments naming them).
"""

from __future__ import annotations

import pytest

from annotator.models import (
    AdjudicationItem,
    Assignment,
    Comment,
    DiscoveryRun,
    Export,
    ImportJob,
    LLMRun,
    LLMTraceResult,
    ModeProposal,
    SavedView,
    Thread,
)
from annotator.services.adjudication import do_check_trace
from annotator.services.annotations import do_save_draft
from annotator.services.api_tokens import do_issue_ingest_token
from annotator.services.assignment import do_assign
from annotator.services.evolution import do_preview_migration
from annotator.services.llm.config import current_prompt, llm_rater
from annotator.services.members import set_password_path
from annotator.services.payload import AnnotationPayload
from annotator.services.reports import do_request_report
from annotator.services.rounds import TraceChoice, do_close_round, do_open_round
from annotator.similar.service import do_build, do_request_build
from tests.factories import BatchFactory, ProjectFactory, UserFactory, add_member, trace_with_steps
from tests.labels import submit

# Marks planted on B's annotations (T1, T2), on the LLM rater's annotation of T1 and in T1's answer key.
MARK_T1 = "ZQXONE"
MARK_T2 = "ZQXTWO"


def _mark(annotation, text: str) -> None:
    annotation.note = f"{text}-note"
    annotation.save(update_fields=["note"])
    annotation.labels.update(note=f"{text}-label")


@pytest.fixture
def world(project, owner, annotator_a, annotator_b, adjudicator, outsider):
    viewer = UserFactory(username="vera-viewer")
    add_member(project, viewer, "viewer")
    owner_annotator = UserFactory(username="otto-owner-annotator")
    add_member(project, owner_annotator, "owner")
    other_owner = UserFactory(username="oona-other-owner")
    add_member(ProjectFactory(taxonomy_version=project.taxonomy_version, slug="other"), other_owner, "owner")
    staff = UserFactory(username="stan-staff", is_staff=True)

    batch = BatchFactory(name="run-1")
    project.batches.add(batch)
    t1, t2 = trace_with_steps(5, batch=batch), trace_with_steps(5, batch=batch)
    t1.answer_key = {"mistake_reason": f"{MARK_T1}-key"}
    t1.save()
    do_assign(project)  # A and B on both traces (overlap 2)
    add_member(project, owner_annotator, "annotator")
    Assignment.objects.create(project=project, trace=t1, annotator=owner_annotator)

    slot_a = Assignment.objects.get(project=project, trace=t1, annotator=annotator_a)
    do_save_draft(slot_a, AnnotationPayload(note="my own draft"), actor=annotator_a, base_version=0)
    _mark(submit(project, t1, annotator_b, {"FM-1.1": [1]}), MARK_T1)
    rater = llm_rater(project, "fake-model")
    _mark(submit(project, t1, rater, {"FM-3.1": [2]}), f"{MARK_T1}-llm")
    submit(project, t2, annotator_a, {"FM-1.1": [1]})
    _mark(submit(project, t2, annotator_b, {"FM-2.1": [2]}), MARK_T2)
    item = do_check_trace(project.pk, t2.pk)
    assert item.status == AdjudicationItem.Status.OPEN

    report = do_request_report(project, {})
    job = ImportJob.objects.create(batch_name="upload", project=project, created_by=owner, status="succeeded")
    export = Export.objects.create(project=project, created_by=owner, status="succeeded")
    run = LLMRun.objects.create(
        project=project,
        batch=batch,
        prompt=current_prompt(project),
        rater=rater,
        model="fake-model",
        created_by=owner,
        status="succeeded",
    )
    # A discovery run (the same id as the LLM run: the routes share `run_id`) that read T1: its candidate's
    # name and quote come from T1, so OA (blind on T1) must never receive them.
    DiscoveryRun.objects.create(
        pk=run.pk,
        project=project,
        kind="discover",
        phase="done",
        status="succeeded",
        model="fake-model",
        raters=["m1", "m2", "m3"],
        induction_ids=[t1.pk],
        held_ids=[t2.pk],
        candidates=[
            {
                "code": "NEW-1",
                "name": f"{MARK_T1}-candidate",
                "definition": "d",
                "examples": [
                    {"trace": t1.pk, "external_id": t1.external_id, "step": 1, "quote": f"{MARK_T1}-q"}
                ],
            }
        ],
    )
    # A failed LLM answer shows its raw output (the model's labels) on the run's page.
    LLMTraceResult.objects.create(
        run=run, trace=t1, status="failed", raw_output=f"{MARK_T1}-llm-raw", error="unparseable"
    )
    # A closed calibration round on T2 (its disagreements open threads), and B's comment and proposal on T1.
    round_ = do_open_round(
        project,
        name="Round 1",
        annotators=[annotator_a.username, annotator_b.username],
        choice=TraceChoice(ids=(t2.pk,)),
    )
    do_close_round(round_)
    thread = Thread.objects.create(project=project, trace=t1)
    Comment.objects.create(thread=thread, author=annotator_b, body=f"{MARK_T1}-comment")
    ModeProposal.objects.create(project=project, trace=t1, author=annotator_b, text=f"{MARK_T1}-proposal")
    membership = project.memberships.get(user=annotator_b, role="annotator")
    invited = UserFactory(username="ivy-invited", email="ivy@example.org")
    invited.set_unusable_password()
    invited.save()
    link = set_password_path(invited).rstrip("/").split("/")
    view = SavedView.objects.create(
        project=project, name="Failures", params=[["outcome", "failure"]], created_by=owner
    )
    do_build(do_request_build(project).pk)  # similar traces: the panel lists T2 beside T1
    ingest_token, _ = do_issue_ingest_token(project, owner, name="agent")
    migration = do_preview_migration(project, [{"op": "edit", "code": "FM-1.1", "guidance": "sharper"}])
    kwargs = {
        "uidb64": link[-2],
        "token": link[-1],
        "slug": project.slug,
        "trace_id": t1.pk,
        "index": 0,
        "assignment_id": slot_a.pk,
        "item_id": item.pk,
        "report_id": report.pk,
        "job_id": job.pk,
        "export_id": export.pk,
        "run_id": run.pk,
        "membership_id": membership.pk,
        "round_id": round_.pk,
        "thread_id": thread.pk,
        "migration_id": migration.pk,
        "view_id": view.pk,
        "token_id": ingest_token.pk,
        "figure": "prevalence",
        "format": "json",
    }
    users = {
        "anon": None,
        "out": outsider,
        "A": annotator_a,
        "B": annotator_b,
        "adj": adjudicator,
        "view": viewer,
        "own": owner,
        "OA": owner_annotator,
        "oth": other_owner,
        "staff": staff,
    }
    return users, kwargs
