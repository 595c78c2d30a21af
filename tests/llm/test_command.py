"""python manage.py llm_annotate: a run in this process with progress and a summary; --dry-run; --resume."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.models import LLMRun
from tests.llm.fake_server import answer


def run_command(*args) -> str:
    out = StringIO()
    call_command("llm_annotate", *args, stdout=out)
    return out.getvalue()


def test_it_labels_the_batch_and_prints_progress_and_a_summary(project, traces, llm_config, chat_server):
    chat_server.push(*[answer({"modes": {"FM-1.3": {"present": True, "steps": [0], "reason": "r"}}})] * 2)
    out = run_command(project.slug, "--batch", "run-1", "--limit", "2")
    assert "LLM run" in out and "2 traces" in out
    assert "1/2 traces: 1 labelled" in out and "2/2 traces: 2 labelled" in out
    assert "succeeded: 2 labelled, 0 failed, 0 skipped of 2; 240 tokens; labels by llm:qwen2.5-7b" in out
    assert LLMRun.objects.get().status == "succeeded"


def test_dry_run_prints_the_prompt_of_the_first_trace_and_calls_nothing(
    project, traces, llm_config, chat_server
):
    out = run_command(project.slug, "--batch", "run-1", "--dry-run", "--model", "other-model")
    assert "# Dry run: model other-model" in out and f"trace {traces[0].external_id}" in out
    assert (
        "===== system =====" in out
        and "FM-1.3: " in out
        and "===== user =====" in out
        and "### Step 0" in out
    )
    assert chat_server.requests == [] and not LLMRun.objects.exists()


def test_errors_name_what_to_fix(project, batch, chat_server):
    with pytest.raises(CommandError, match="No project 'nope'"):
        run_command("nope", "--batch", "run-1")
    with pytest.raises(CommandError, match="Set the model name"):
        run_command(project.slug, "--batch", "run-1")
    with pytest.raises(CommandError, match="No batch 'other'"):
        run_command(project.slug, "--batch", "other", "--model", "m")
    with pytest.raises(CommandError, match="--batch is required"):
        run_command(project.slug)


def test_resume_continues_a_stopped_run(project, traces, llm_config, chat_server):
    llm_config.token_cap = 100
    llm_config.save()
    chat_server.push(answer({"modes": {}}))
    out = run_command(project.slug, "--batch", "run-1")
    run = LLMRun.objects.get()
    assert "stopped: token cap reached" in out and f"--resume {run.pk}" in out
    llm_config.token_cap = 0
    llm_config.save()
    chat_server.push(*[answer({"modes": {}})] * 2)
    out = run_command(project.slug, "--resume", str(run.pk))
    assert "succeeded: 3 labelled" in out and len(chat_server.requests) == 3
