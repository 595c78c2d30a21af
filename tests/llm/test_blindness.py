"""Annotators stay blind to the LLM: no LLM label on the annotate page or in the API before they submit, and
after submitting only when the project switches it on."""

from __future__ import annotations

from annotator.models import Assignment, LLMConfig
from annotator.services.annotations import do_submit_annotation
from annotator.services.assignment import do_assign
from annotator.services.llm.runs import do_process_run, do_start_run
from annotator.services.payload import AnnotationPayload, LabelInput
from tests.llm.fake_server import answer

REASON = "LLM-REASON-Repeats-the-same-search"
SUMMARY = "LLM-SUMMARY-stuck-in-a-loop"


def llm_labels_everything(project, chat_server, clock):
    chat_server.push(
        *[
            answer(
                {"modes": {"FM-1.3": {"present": True, "steps": [1], "reason": REASON}}, "summary": SUMMARY}
            )
        ]
        * 3
    )
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    return do_process_run(started.pk, sleep=clock.sleep, clock=clock).run


def seen_by(client, slot) -> str:
    """Everything the annotator can fetch about their slot: the page, and the API answers."""
    base = f"/api/projects/{slot.project.slug}/assignments/{slot.pk}"
    return "\n".join(
        [
            client.get(f"/p/{slot.project.slug}/a/{slot.pk}/").content.decode(),
            client.get(f"{base}/annotation/").content.decode(),
            client.get(f"{base}/llm-labels/").content.decode(),
            client.get(f"/api/projects/{slot.project.slug}/assignments/").content.decode(),
        ]
    )


def test_llm_labels_stay_hidden_until_the_annotator_submits_and_the_switch_is_on(
    client, project, traces, llm_config, chat_server, clock, annotator_a
):
    do_assign(project)
    assert llm_labels_everything(project, chat_server, clock).done == 3
    slot = Assignment.objects.get(project=project, annotator=annotator_a, trace=traces[0])
    client.force_login(annotator_a)
    LLMConfig.objects.filter(project=project).update(show_to_annotators=True)
    before = seen_by(client, slot)  # not submitted yet: hidden even with the switch on
    assert (
        REASON not in before
        and SUMMARY not in before
        and "llm:qwen" not in before
        and 'id="llm-opinion"' not in before
    )
    assert client.get(f"/api/projects/{project.slug}/assignments/{slot.pk}/llm-labels/").json() == {
        "visible": False,
        "opinions": [],
    }

    do_submit_annotation(
        slot, AnnotationPayload(labels=(LabelInput("FM-1.1"),)), actor=annotator_a, base_version=0
    )
    slot.refresh_from_db()
    after = seen_by(client, slot)
    assert REASON in after and SUMMARY in after and 'id="llm-opinion"' in after
    body = client.get(f"/api/projects/{project.slug}/assignments/{slot.pk}/llm-labels/").json()
    assert body["visible"] is True
    assert body["opinions"][0]["rater"] == "llm:qwen2.5-7b"
    assert body["opinions"][0]["labels"] == [
        {
            "mode": "FM-1.3",
            "name": body["opinions"][0]["labels"][0]["name"],
            "primary": False,
            "steps": [1],
            "reason": REASON,
        }
    ]

    LLMConfig.objects.filter(project=project).update(show_to_annotators=False)  # the default
    off = seen_by(client, slot)
    assert REASON not in off and SUMMARY not in off


def test_another_annotators_slot_and_other_traces_reveal_nothing(
    client, project, traces, llm_config, chat_server, clock, annotator_a, annotator_b
):
    do_assign(project)
    llm_labels_everything(project, chat_server, clock)
    LLMConfig.objects.filter(project=project).update(show_to_annotators=True)
    slot_b = Assignment.objects.get(project=project, annotator=annotator_b, trace=traces[0])
    client.force_login(annotator_a)
    assert client.get(f"/api/projects/{project.slug}/assignments/{slot_b.pk}/llm-labels/").status_code == 404
    other = Assignment.objects.get(project=project, annotator=annotator_a, trace=traces[1])
    do_submit_annotation(
        Assignment.objects.get(project=project, annotator=annotator_a, trace=traces[0]),
        AnnotationPayload(no_failure=True), actor=annotator_a, base_version=0,
    )  # fmt: skip
    assert REASON not in seen_by(client, other)  # submitting one trace reveals nothing about another
