"""The ranks follow their inputs: a gold decision schedules the (debounced) refresh after commit, and with a
worker one refresh is sent for many changes."""

from __future__ import annotations

from annotator.models import AdjudicationItem, QueueOrder
from annotator.services.adjudication import do_check_trace
from annotator.services.followups import schedule_triage, triage_refresh_key
from annotator.services.gold import Decision, ModeDecision, do_decide
from tests.factories import BatchFactory, trace_with_steps
from tests.labels import submit


def test_a_gold_decision_schedules_the_triage_refresh(
    project, annotator_a, annotator_b, adjudicator, monkeypatch, django_capture_on_commit_callbacks
):
    batch = BatchFactory(name="gold")
    project.batches.add(batch)
    trace = trace_with_steps(4, batch=batch)
    submit(project, trace, annotator_a, {"FM-1.1": [1]})
    submit(project, trace, annotator_b, {"FM-1.2": [2]})
    do_check_trace(project.pk, trace.pk)
    item = AdjudicationItem.objects.get(project=project, trace=trace)
    calls: list[int] = []
    monkeypatch.setattr("annotator.services.gold.schedule_triage", calls.append)
    decision = Decision(
        modes=(
            ModeDecision("FM-1.1", "a", reason_code="evidence"),
            ModeDecision("FM-1.2", "absent", reason_code="no_evidence"),
        )
    )
    with django_capture_on_commit_callbacks(execute=True):
        do_decide(item, decision, actor=adjudicator, base_version=item.version)
    assert calls == [project.pk]


def test_with_a_worker_many_changes_send_one_refresh(project, monkeypatch, settings):
    sent: list[tuple] = []
    monkeypatch.setattr("annotator.services.followups.is_eager", lambda: False)
    monkeypatch.setattr(
        "annotator.services.followups.enqueue",
        lambda name, *args, **options: sent.append((name, args, options)),
    )
    from django.core.cache import cache

    cache.delete(triage_refresh_key(project.pk))
    schedule_triage(project.pk)
    assert sent == []  # trace order: nothing to refresh
    project.queue_order = QueueOrder.LLM_RARE_MODES
    project.save(update_fields=["queue_order"])
    for _ in range(5):
        schedule_triage(project.pk)
    assert [(name, args) for name, args, _ in sent] == [("annotator.triage.refresh_ranks", (project.pk,))]
    assert sent[0][2]["countdown"] == settings.AGREEMENT_DEBOUNCE_SECONDS
    cache.delete(triage_refresh_key(project.pk))


def test_a_switch_during_a_refresh_wins(project, monkeypatch):
    from annotator.models import Project, TriageRank
    from annotator.triage import service as triage

    trace = trace_with_steps(2, batch=BatchFactory(name="switch"))
    project.batches.add(trace.batch)
    TriageRank.objects.create(project=project, trace=trace, rank=1)  # what the switch's own refresh replaces
    Project.objects.filter(pk=project.pk).update(queue_order=QueueOrder.LLM_RARE_MODES)

    def switched_meanwhile(project, signal):
        Project.objects.filter(pk=project.pk).update(queue_order=QueueOrder.LLM_UNCERTAIN)
        return []

    monkeypatch.setattr(triage, "triage_ranking", switched_meanwhile)
    assert triage.do_refresh_ranks(project.pk) == 0
    assert TriageRank.objects.filter(project=project).count() == 1  # left for the refresh of the new order
