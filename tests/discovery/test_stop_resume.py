"""A run stops at its token cap, like an LLM run, and a resume asks only what has no answer yet."""

from __future__ import annotations

from annotator.discovery.process import do_process_discovery
from annotator.discovery.service import do_resume_discovery, do_start_discovery, do_stop_discovery
from annotator.models import DiscoveryAnswer, DiscoveryRun
from tests.discovery.conftest import RATERS


def test_a_capped_run_stops_and_resumes_without_asking_twice(owner_access, llm_config, synthetic, standin):
    llm_config.token_cap = 3_000  # the stand-in books 550 tokens an answer
    llm_config.save()
    run = do_start_discovery(
        owner_access, scope="batch:synthetic", raters=RATERS, sample=60, gate_sample=30, enqueue=False
    )
    run = do_process_discovery(run.pk)
    assert (run.status, run.stop_reason) == (DiscoveryRun.Status.STOPPED, "token cap reached")
    asked = standin.requests
    assert 0 < run.answers.count() == asked < 60
    llm_config.token_cap = 0
    llm_config.save()
    assert do_resume_discovery(run, enqueue=False)
    run = do_process_discovery(run.pk)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    analyses = run.answers.filter(phase=DiscoveryAnswer.Phase.ANALYSE)
    assert analyses.count() == 60 and standin.requests == run.answers.count()
    assert len(run.candidates) == 3


def test_a_stopped_run_is_not_processed_until_resumed(owner_access, llm_config, synthetic, standin):
    run = do_start_discovery(
        owner_access, scope="batch:synthetic", raters=RATERS, sample=60, gate_sample=30, enqueue=False
    )
    assert do_stop_discovery(run)
    assert do_process_discovery(run.pk).status == DiscoveryRun.Status.STOPPED and standin.requests == 0
    assert not do_stop_discovery(run)
