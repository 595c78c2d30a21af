"""The queue's verbs: check (agreed -> gold, disagreement -> queue), claim, decide, reopen, conflicts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import AdjudicationItem, Annotation, GoldHistory, GoldLabel, LabelApplication
from annotator.raters import get_imported_rater, get_llm_rater
from annotator.services.adjudication import (
    AdjudicationConflict,
    AdjudicationInvalid,
    do_check_trace,
    do_claim,
    do_claim_next,
    do_release,
    do_reopen,
    queue_counts,
)
from annotator.services.annotations import AnnotationLocked
from annotator.services.gold import Decision, ModeDecision, do_decide
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit

Status = AdjudicationItem.Status


@pytest.fixture
def trace(project):
    return project_trace(project)


def gold(item) -> dict[str, tuple[str, list[int]]]:
    return {
        g.mode.code: (g.source, [e["step"] for e in g.evidence])
        for g in GoldLabel.objects.filter(item=item).select_related("mode")
    }


def test_it_waits_until_the_overlap_is_reached(project, trace, annotator_a):
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    assert do_check_trace(project.pk, trace.pk) is None


def test_full_agreement_becomes_gold_automatically(project, trace, annotator_a, annotator_b):
    submit(project, trace, annotator_a, {"FM-1.1": [2], "FM-3.1": [4]})
    submit(project, trace, annotator_b, {"FM-1.1": [3], "FM-3.1": [4]})
    item = do_check_trace(project.pk, trace.pk)
    assert item.status == Status.AGREED
    assert item.disputed == []
    assert gold(item) == {"FM-1.1": ("agreed", [2, 3]), "FM-3.1": ("agreed", [4])}
    assert GoldHistory.objects.get(item=item).action == "agreed"


def test_two_no_failure_annotations_agree_on_an_empty_gold_set(project, trace, annotator_a, annotator_b):
    submit(project, trace, annotator_a, {})
    submit(project, trace, annotator_b, {})
    item = do_check_trace(project.pk, trace.pk)
    assert item.status == Status.AGREED
    assert gold(item) == {}


def test_a_disagreement_is_queued_with_its_severity(project, trace, annotator_a, annotator_b):
    submit(project, trace, annotator_a, {"FM-1.1": [2], "FM-3.1": [4], "FM-2.1": []})
    submit(project, trace, annotator_b, {"FM-1.1": [2]})
    item = do_check_trace(project.pk, trace.pk)
    assert item.status == Status.OPEN
    assert item.disputed == ["FM-2.1", "FM-3.1"]
    assert item.severity == 100 + 2  # FM-3.1 is fatal
    assert not GoldLabel.objects.filter(item=item).exists()


def test_the_queue_puts_fatal_disputes_first(project, annotator_a, annotator_b, adjudicator):
    mild, fatal = project_trace(project), project_trace(project)
    submit(project, mild, annotator_a, {"FM-1.1": [], "FM-1.2": [], "FM-1.3": []})
    submit(project, mild, annotator_b, {})
    submit(project, fatal, annotator_a, {"FM-3.3": [1]})
    submit(project, fatal, annotator_b, {})
    do_check_trace(project.pk, mild.pk)
    do_check_trace(project.pk, fatal.pk)
    assert do_claim_next(project, adjudicator).trace_id == fatal.pk


def test_checking_twice_changes_nothing(project, trace, annotator_a, annotator_b):
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    first = do_check_trace(project.pk, trace.pk)
    again = do_check_trace(project.pk, trace.pk)
    assert (again.pk, again.version) == (first.pk, first.version)
    assert AdjudicationItem.objects.count() == 1
    assert GoldHistory.objects.count() == 1


def test_a_late_annotation_re_evaluates_before_adjudication(project, trace, annotator_a, annotator_b):
    # Submitted annotations freeze once the item exists; a slot submitted late still counts.
    carol = UserFactory(username="carol-annotator")
    add_member(project, carol, "annotator")
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {"FM-1.1": [3], "FM-2.1": [1]})
    first = do_check_trace(project.pk, trace.pk)
    assert (first.status, first.disputed) == (Status.OPEN, ["FM-2.1"])
    submit(project, trace, carol, {"FM-1.1": [5], "FM-3.1": [4]})
    item = do_check_trace(project.pk, trace.pk)
    assert item.status == Status.OPEN
    assert item.disputed == ["FM-2.1", "FM-3.1"]
    assert [h.action for h in GoldHistory.objects.filter(item=item).order_by("at", "id")] == [
        "queued",
        "reevaluated",
    ]


def test_the_submit_hook_runs_the_check(
    project, trace, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submit(project, trace, annotator_a, {"FM-1.1": [2]})
        submit(project, trace, annotator_b, {})
    assert AdjudicationItem.objects.get(trace=trace).status == Status.OPEN


def test_imported_annotators_count_when_the_project_says_so_and_llm_raters_never(project, trace, annotator_a):
    imported, _ = get_imported_rater("published", "imported-ann")
    llm = get_llm_rater("qwen2.5-7b")
    add_member(project, imported, "annotator")
    add_member(project, llm, "annotator")
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, llm, {})
    assert do_check_trace(project.pk, trace.pk) is None
    submit(project, trace, imported, {"FM-1.1": [1]})
    # By default imported raters are reference raters (issue 32): the trace still waits for a second person.
    assert do_check_trace(project.pk, trace.pk) is None
    project.imported_labels_count_toward_overlap = True
    project.save()
    assert do_check_trace(project.pk, trace.pk).status == Status.AGREED


def decide_all(item, choice="a", reason="evidence"):
    return Decision(tuple(ModeDecision(code, choice, reason_code=reason) for code in item.disputed))


def test_an_adjudicator_decides_and_agreed_modes_carry_over(
    project, trace, annotator_a, annotator_b, adjudicator
):
    a = submit(project, trace, annotator_a, {"FM-1.1": [2], "FM-3.1": [4]})
    b = submit(project, trace, annotator_b, {"FM-1.1": [3], "FM-2.1": [6]})
    do_check_trace(project.pk, trace.pk)
    item = do_claim_next(project, adjudicator)
    assert item.claimed_by == adjudicator
    decision = Decision(
        (
            ModeDecision("FM-2.1", "b", reason_code="evidence"),
            ModeDecision("FM-3.1", "absent", reason_code="no_evidence", note="The run did finish"),
        ),
        note="checked the log",
    )
    resolved = do_decide(item, decision, actor=adjudicator, base_version=item.version)
    assert resolved.status == Status.RESOLVED and resolved.resolved_by == adjudicator
    assert gold(resolved) == {"FM-1.1": ("agreed", [2, 3]), "FM-2.1": ("accept_b", [6])}
    record = GoldHistory.objects.get(item=item, action="decided")
    assert record.after["decisions"][1] == {
        "mode": "FM-3.1",
        "choice": "absent",
        "steps": [],
        "reason_code": "no_evidence",
        "note": "The run did finish",
    }
    assert record.after["annotators"] == {"a": annotator_a.username, "b": annotator_b.username}
    # Raw annotations are untouched.
    assert sorted(LabelApplication.objects.filter(annotation=a).values_list("mode__code", flat=True)) == [
        "FM-1.1",
        "FM-3.1",
    ]
    assert Annotation.objects.get(pk=b.pk).version == b.version


def test_an_own_decision_with_evidence(project, trace, annotator_a, annotator_b, adjudicator):
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    do_check_trace(project.pk, trace.pk)
    item = do_claim_next(project, adjudicator)
    decision = Decision((ModeDecision("FM-1.1", "present", steps=(7, 8), reason_code="evidence"),))
    resolved = do_decide(item, decision, actor=adjudicator, base_version=item.version)
    assert gold(resolved) == {"FM-1.1": ("adjudicator", [7, 8])}


def test_an_incomplete_decision_is_refused_and_changes_nothing(
    project, trace, annotator_a, annotator_b, adjudicator
):
    submit(project, trace, annotator_a, {"FM-1.1": [2], "FM-1.2": []})
    submit(project, trace, annotator_b, {})
    do_check_trace(project.pk, trace.pk)
    item = do_claim_next(project, adjudicator)
    bad = Decision((ModeDecision("FM-1.1", "present", steps=(99,), reason_code="other"),))
    with pytest.raises(AdjudicationInvalid) as refused:
        do_decide(item, bad, actor=adjudicator, base_version=item.version)
    assert refused.value.messages == [
        "FM-1.1: say why in the note (reason “other”)",
        "FM-1.1: step 99 is not in this trace (it has 10 steps, from 0)",
        "Decide FM-1.2: accept an annotator's answer or give your own",
    ]
    item.refresh_from_db()
    assert item.status == Status.OPEN and not GoldLabel.objects.exists()


def test_two_adjudicators_saving_the_same_item_one_wins_the_other_is_told(
    project, trace, annotator_a, annotator_b, adjudicator
):
    second = UserFactory(username="sam-second")
    add_member(project, second, "adjudicator")
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    item = do_check_trace(project.pk, trace.pk)
    seen = item.version  # both open the page before anyone claims
    do_decide(item, decide_all(item, "a"), actor=adjudicator, base_version=seen)
    with pytest.raises(AdjudicationConflict) as conflict:
        do_decide(item, decide_all(item, "b"), actor=second, base_version=seen)
    assert "ada-adjudicator decided this item" in str(conflict.value)
    assert gold(AdjudicationItem.objects.get(pk=item.pk)) == {"FM-1.1": ("accept_a", [2])}


def test_a_live_claim_keeps_others_out_until_it_expires(
    project, trace, annotator_a, annotator_b, adjudicator
):
    second = UserFactory(username="sam-second")
    add_member(project, second, "adjudicator")
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    do_check_trace(project.pk, trace.pk)
    item = do_claim_next(project, adjudicator)
    assert do_claim_next(project, second) is None
    with pytest.raises(AdjudicationConflict, match="ada-adjudicator is deciding this item"):
        do_decide(item, decide_all(item), actor=second, base_version=item.version)
    AdjudicationItem.objects.filter(pk=item.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    taken = do_claim_next(project, second)
    assert taken.pk == item.pk and taken.claimed_by == second
    with pytest.raises(AdjudicationConflict):  # the first adjudicator's form is now stale
        do_decide(item, decide_all(item), actor=adjudicator, base_version=item.version)


def test_claiming_locks_the_annotations(project, trace, annotator_a, annotator_b, adjudicator):
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    do_check_trace(project.pk, trace.pk)
    item = do_claim_next(project, adjudicator)
    do_release(item, adjudicator)
    with pytest.raises(AnnotationLocked):
        submit(project, trace, annotator_b, {"FM-1.1": [2]})


def test_claim_from_the_page_refuses_a_stale_version(project, trace, annotator_a, annotator_b, adjudicator):
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    item = do_check_trace(project.pk, trace.pk)
    claimed = do_claim(item, adjudicator, base_version=item.version)
    assert claimed.claimed_by == adjudicator
    with pytest.raises(AdjudicationConflict):
        do_claim(item, adjudicator, base_version=item.version)


def test_reopen_keeps_history_and_allows_a_new_decision(
    project, trace, annotator_a, annotator_b, adjudicator
):
    submit(project, trace, annotator_a, {"FM-1.1": [2]})
    submit(project, trace, annotator_b, {})
    do_check_trace(project.pk, trace.pk)
    item = do_claim_next(project, adjudicator)
    item = do_decide(item, decide_all(item, "a"), actor=adjudicator, base_version=item.version)
    reopened = do_reopen(item, actor=adjudicator, base_version=item.version, note="second look")
    assert reopened.status == Status.OPEN and not GoldLabel.objects.filter(item=item).exists()
    with pytest.raises(AdjudicationInvalid):
        do_reopen(reopened, actor=adjudicator, base_version=reopened.version)
    again = do_decide(reopened, decide_all(reopened, "b"), actor=adjudicator, base_version=reopened.version)
    assert gold(again) == {}
    actions = list(GoldHistory.objects.filter(item=item).order_by("at", "id").values_list("action", "before"))
    assert [a for a, _ in actions] == ["queued", "decided", "reopened", "decided"]
    assert actions[2][1][0]["mode"] == "FM-1.1"  # the reopened gold is kept in history


def test_queue_counts(project, annotator_a, annotator_b, adjudicator):
    for labels_b in ({}, {"FM-1.1": [1]}, {}):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        submit(project, trace, annotator_b, labels_b)
        do_check_trace(project.pk, trace.pk)
    do_claim_next(project, adjudicator)
    assert queue_counts(project) == {"open": 2, "claimed": 1, "resolved": 0, "agreed": 1}


def test_single_primary_disagreement_on_the_primary_label(
    taxonomies, owner, annotator_a, annotator_b, adjudicator
):
    from tests.factories import ProjectFactory

    project = ProjectFactory(taxonomy_version=taxonomies["agent-failures-6"], slug="six")
    for user, role in (
        (owner, "owner"),
        (annotator_a, "annotator"),
        (annotator_b, "annotator"),
        (adjudicator, "adjudicator"),
    ):
        add_member(project, user, role)
    trace = project_trace(project)
    submit(project, trace, annotator_a, {"AF-1": [1], "AF-2": [2]}, primary="AF-1")
    submit(project, trace, annotator_b, {"AF-1": [1], "AF-2": [3]}, primary="AF-2")
    item = do_check_trace(project.pk, trace.pk)
    assert (item.status, item.disputed, item.primary_disputed) == (Status.OPEN, [], True)
    item = do_claim_next(project, adjudicator)
    with pytest.raises(AdjudicationInvalid, match="Choose the primary"):
        do_decide(item, Decision(), actor=adjudicator, base_version=item.version)
    resolved = do_decide(item, Decision(primary="AF-2"), actor=adjudicator, base_version=item.version)
    rows = {g.mode.code: g.primary for g in GoldLabel.objects.filter(item=resolved).select_related("mode")}
    assert rows == {"AF-1": False, "AF-2": True}
