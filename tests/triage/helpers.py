"""Model answers scripted on the stand-in, and a run of them to the end."""

from __future__ import annotations

from annotator.services.llm.runs import do_process_run, do_start_run
from tests.llm.fake_server import answer

REASON = "TRIAGE-MODEL-REASON"


def model_says(chosen: set[str] | frozenset[str], confidence: float | None = None, summary: str = ""):
    body: dict = {
        "modes": {code: {"present": True, "steps": [1], "reason": REASON} for code in sorted(chosen)}
    }
    if summary:
        body["summary"] = summary
    if confidence is not None:
        body["confidence"] = confidence
    return answer(body)


def run_model(project, chat_server, clock, replies, *, model: str | None = None):
    chat_server.push(*replies)
    run = do_start_run(project, batch_name="run-1", model=model, enqueue=False)
    return do_process_run(run.pk, sleep=clock.sleep, clock=clock).run
