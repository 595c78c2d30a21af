"""The LLM triage order end to end: the model's confidence stored, ranks written when the owner switches the
order and after a run, the claim and the queue page following them (SQLite and PostgreSQL), trace order
restored, a calibration round from the order."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import (
    AdjudicationItem,
    Assignment,
    CalibrationRound,
    GoldLabel,
    LLMTraceResult,
    QueueOrder,
    TriageRank,
)
from annotator.services.assignment import do_assign, do_claim_next
from annotator.triage import signals
from annotator.triage.service import (
    TriageError,
    do_open_triage_round,
    do_set_queue_order,
    triage_ranking,
)
from taxonomy.models import FailureMode
from tests.factories import trace_with_steps
from tests.labels import submit
from tests.triage.helpers import model_says, run_model

# The model's confidence per trace (None: it gave none): least certain first is 2, 3, 1, then 4 unranked.
CONFIDENCE = [0.9, 0.2, 0.6, None]


@pytest.fixture
def four(project, batch):
    traces = [trace_with_steps(4, batch=batch) for _ in CONFIDENCE]
    do_assign(project)  # overlap 2: both annotators get every trace
    return traces


@pytest.fixture
def answered(project, four, llm_config, chat_server, clock):
    replies = [model_says({"FM-1.1"}, confidence) for confidence in CONFIDENCE]
    assert run_model(project, chat_server, clock, replies).done == 4
    return four


def claims(project, user) -> list[int]:
    out = []
    while (slot := do_claim_next(project, user)) is not None:
        out.append(slot.trace_id)
    return out


def test_the_models_confidence_is_stored_with_its_result(project, answered):
    stored = dict(LLMTraceResult.objects.values_list("trace_id", "confidence"))
    assert [stored[t.pk] for t in answered] == CONFIDENCE


def test_claims_follow_the_least_certain_order_and_trace_order_comes_back(
    project, answered, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    t1, t2, t3, t4 = (t.pk for t in answered)
    with django_capture_on_commit_callbacks(execute=True):
        assert do_set_queue_order(project, QueueOrder.LLM_UNCERTAIN)
    assert list(TriageRank.objects.filter(project=project).values_list("trace_id", "rank")) == [
        (t2, 1),
        (t3, 2),
        (t1, 3),
    ]
    assert claims(project, annotator_a) == [t2, t3, t1, t4]

    with django_capture_on_commit_callbacks(execute=True):
        assert do_set_queue_order(project, QueueOrder.TRACE)
    assert not TriageRank.objects.filter(project=project).exists()
    assert claims(project, annotator_b) == [t1, t2, t3, t4]


def test_the_queue_page_lists_the_open_traces_in_claim_order(
    client, project, answered, annotator_a, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        do_set_queue_order(project, QueueOrder.LLM_UNCERTAIN)
    client.force_login(annotator_a)
    page = client.get(reverse("project-detail", args=[project.slug])).content.decode()
    listed = page[page.index('id="up-next"') :]
    positions = [listed.index(t.external_id) for t in answered]
    assert sorted(range(4), key=lambda i: positions[i]) == [1, 2, 0, 3]


def test_ranks_follow_a_run_that_finishes_after_the_switch(
    project, four, llm_config, chat_server, clock, annotator_a, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        do_set_queue_order(project, QueueOrder.LLM_UNCERTAIN)
    assert not TriageRank.objects.exists()  # nothing answered yet: nothing to rank
    with django_capture_on_commit_callbacks(execute=True):
        run_model(project, chat_server, clock, [model_says(set(), c) for c in CONFIDENCE])
    assert claims(project, annotator_a) == [four[1].pk, four[2].pk, four[0].pk, four[3].pk]


def test_two_models_that_disagree_put_that_trace_first(project, four, llm_config, chat_server, clock):
    same = [model_says({"FM-1.1"}) for _ in four]
    run_model(project, chat_server, clock, same)
    other = [model_says({"FM-1.1"}), model_says({"FM-1.1"}), model_says({"FM-2.2"}), model_says({"FM-1.1"})]
    run_model(project, chat_server, clock, other, model="other-model")
    ranked = triage_ranking(project, signals.UNCERTAIN)
    assert ranked[0].trace == four[2].pk and ranked[0].value == 1.0
    assert {s.value for s in ranked[1:]} == {0.0}


def _gold(project, trace, codes):
    modes = {m.code: m for m in FailureMode.objects.filter(version=project.taxonomy_version)}
    item = AdjudicationItem.objects.create(project=project, trace=trace, status="resolved")
    GoldLabel.objects.bulk_create(GoldLabel(item=item, mode=modes[c], source="adjudicator") for c in codes)


def test_disagreement_with_gold_on_the_same_batch_orders_the_claims(
    project, batch, llm_config, chat_server, clock, annotator_a, django_capture_on_commit_callbacks
):
    traces = [trace_with_steps(4, batch=batch) for _ in range(5)]
    do_assign(project)
    # On gold traces 0 and 1 the model's "FM-1.1 present" was wrong; on 2 its "nothing" was right.
    said = [{"FM-1.1"}, {"FM-1.1"}, set(), {"FM-1.1"}, set()]
    run_model(project, chat_server, clock, [model_says(s) for s in said])
    for trace in traces[:3]:
        _gold(project, trace, [])
    with django_capture_on_commit_callbacks(execute=True):
        do_set_queue_order(project, QueueOrder.LLM_GOLD_DISAGREEMENT)
    order = claims(project, annotator_a)
    assert order.index(traces[3].pk) < order.index(traces[4].pk)  # its FM-1.1 call is the doubtful one
    scores = {s.trace: s.value for s in triage_ranking(project, signals.GOLD_DISAGREEMENT)}
    assert scores[traces[3].pk] == 1.0 and scores[traces[4].pk] == 0.0


def test_modes_people_rarely_marked_come_first(
    project,
    four,
    llm_config,
    chat_server,
    clock,
    annotator_a,
    annotator_b,
    django_capture_on_commit_callbacks,
):
    # People marked FM-1.1 on two traces; the model marks FM-1.1 on 0 and 1, FM-2.2 (never seen) on 2.
    said = [{"FM-1.1"}, {"FM-1.1"}, {"FM-2.2"}, set()]
    run_model(project, chat_server, clock, [model_says(s) for s in said])
    with django_capture_on_commit_callbacks(execute=True):
        do_set_queue_order(project, QueueOrder.LLM_RARE_MODES)
    with django_capture_on_commit_callbacks(execute=True):  # a human label arrives: the ranks follow
        submit(project, four[0], annotator_b, {"FM-1.1": [1]})
        submit(project, four[1], annotator_b, {"FM-1.1": [1]})
    assert claims(project, annotator_a) == [four[2].pk, four[0].pk, four[1].pk, four[3].pk]


def test_a_calibration_round_takes_the_traces_the_model_is_least_sure_of(
    project, answered, annotator_a, annotator_b, owner
):
    round_ = do_open_triage_round(
        project,
        signal=signals.UNCERTAIN,
        n=2,
        name="Unsure",
        annotators=[annotator_a.username, annotator_b.username],
        actor=owner,
    )
    assert set(round_.traces.values_list("pk", flat=True)) == {answered[1].pk, answered[2].pk}
    assert round_.selection["signal"] == "uncertain"
    assert Assignment.objects.filter(calibration_round=round_).count() == 4
    # The next round from the same order passes over the traces already in one: only trace 0 is left
    # ranked (trace 3 has no confidence), too few for a round.
    with pytest.raises(TriageError, match="fewer than 2 traces outside other rounds"):
        do_open_triage_round(
            project,
            signal="uncertain",
            n=2,
            name="Next",
            annotators=[annotator_a.username, annotator_b.username],
        )
    with pytest.raises(TriageError, match="from 2 to 5,000"):
        do_open_triage_round(project, signal="uncertain", n=1, name="x", annotators=[])


def test_the_owner_opens_a_round_from_the_triage_page(
    client, project, answered, owner, annotator_a, annotator_b
):
    client.force_login(owner)
    page = client.get(reverse("project-triage", args=[project.slug]))
    assert page.status_code == 200 and 'id="triage-rows"' in page.content.decode()
    response = client.post(
        reverse("project-triage-round", args=[project.slug]),
        {
            "signal": "uncertain",
            "n": "2",
            "name": "From triage",
            "annotators": ["ana-annotator", "ben-annotator"],
        },
    )
    assert response.status_code == 302 and response.url == reverse("rounds", args=[project.slug])
    round_ = CalibrationRound.objects.get(name="From triage")
    assert set(round_.traces.values_list("pk", flat=True)) == {answered[1].pk, answered[2].pk}
    refused = client.post(
        reverse("project-triage-round", args=[project.slug]),
        {"signal": "uncertain", "n": "lots", "name": "Bad", "annotators": ["ana-annotator"]},
        follow=True,
    )
    assert "The round was not opened" in refused.content.decode()


def test_the_settings_page_switches_the_order(
    client, project, answered, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    page = client.get(reverse("project-members", args=[project.slug])).content.decode()
    assert 'name="queue_order"' in page
    form = {
        "name": project.name,
        "overlap": 2,
        "reservation_minutes": 30,
        "guidelines": "",
        "queue_order": "llm_uncertain",
    }
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("project-settings", args=[project.slug]), form)
    project.refresh_from_db()
    assert project.queue_order == "llm_uncertain"
    assert TriageRank.objects.filter(project=project).count() == 3
