"""A discovery run keeps the LLM run's limits everywhere it spends: the owner's stop and the token cap hold
between embedding batches (whose tokens count), the estimate counts the embeddings, and a run whose endpoint
is down gives up after a few answers instead of failing every trace."""

from __future__ import annotations

import threading

from annotator.discovery.estimate import estimate_discovery
from annotator.discovery.process import do_process_discovery
from annotator.discovery.service import do_resume_discovery, do_stop_discovery
from annotator.discovery.synthetic import PLANTED
from annotator.llm.client import ChatClient
from annotator.models import DiscoveryAnswer, DiscoveryRun
from annotator.services.llm.flight import UNAVAILABLE_LIMIT
from tests.discovery.conftest import CHAT_TOKENS, EMBED_BATCH, EMBED_TOKENS, RATERS, start_discovery


def _namings(model) -> int:
    return sum(p.startswith("Below are analyses") for p in model.prompts)


def test_the_owners_stop_between_embedding_batches_is_honoured(
    owner_access, embedding, synthetic, model, monkeypatch
):
    run = start_discovery(owner_access)
    embed = ChatClient.embed

    def embed_then_stop(client, texts, name):
        found = embed(client, texts, name)
        do_stop_discovery(run)  # the owner presses stop while the first batch is out
        return found

    monkeypatch.setattr(ChatClient, "embed", embed_then_stop)
    stopped = do_process_discovery(run.pk)
    assert (stopped.status, stopped.phase) == (DiscoveryRun.Status.STOPPED, DiscoveryRun.Phase.EMBED)
    assert model.embedded == EMBED_BATCH, "no batch is sent after the stop"
    assert _namings(model) == 0
    assert stopped.tokens_used == 60 * CHAT_TOKENS + EMBED_BATCH * EMBED_TOKENS
    assert (stopped.done, stopped.progress_unit) == (1, "batches"), "the batch that came back is kept"
    batches = stopped.total

    monkeypatch.setattr(ChatClient, "embed", embed)
    assert do_resume_discovery(stopped, enqueue=False)
    done = do_process_discovery(run.pk)
    assert done.status == DiscoveryRun.Status.SUCCEEDED, done.error
    assert sorted(c["code"] for c in done.candidates) == sorted(p.code for p in PLANTED)
    assert batches > 1 and model.embed_requests == batches, "each batch was sent once, the first one too"


def test_the_token_cap_counts_embedding_tokens(owner_access, embedding, synthetic, model, standin):
    embedding.token_cap = 60 * CHAT_TOKENS + 1  # every analysis fits; the first embedding batch crosses it
    embedding.save()
    run = do_process_discovery(start_discovery(owner_access).pk)
    assert (run.status, run.stop_reason) == (DiscoveryRun.Status.STOPPED, "token cap reached")
    assert run.answers.filter(phase=DiscoveryAnswer.Phase.ANALYSE).count() == 60
    assert model.embedded == EMBED_BATCH and _namings(model) == 0
    assert run.tokens_used == 60 * CHAT_TOKENS + EMBED_BATCH * EMBED_TOKENS


def test_the_estimate_counts_the_embeddings_before_anything_is_spent(owner_access, llm_config, synthetic):
    llm_config.prompt_price_per_million = 1
    llm_config.completion_price_per_million = 2
    llm_config.save()
    options = {"scope": "batch:synthetic", "raters": RATERS, "sample": 60, "gate_sample": 30}
    without = estimate_discovery(owner_access, **options)
    assert without.max_embedding_tokens == 0 and without.max_embedding_requests == 0
    llm_config.embeddings_model = "embedder"
    llm_config.save()
    found = estimate_discovery(owner_access, **options)
    assert found.max_embedding_tokens == 60 * llm_config.max_tokens
    assert found.max_embedding_requests > 0
    assert found.requests == without.requests + found.max_embedding_requests
    assert found.max_cost > without.max_cost


def test_a_run_gives_up_when_the_endpoint_stays_unavailable(
    owner_access, llm_config, synthetic, model, standin
):
    model.unavailable = True
    run = do_process_discovery(start_discovery(owner_access).pk, max_retries=0)
    assert run.status == DiscoveryRun.Status.FAILED
    assert run.error.startswith("the endpoint is unavailable: HTTP 503")
    assert run.failed >= UNAVAILABLE_LIMIT
    assert standin.requests < UNAVAILABLE_LIMIT + llm_config.concurrency, (
        "it stopped sending, not 60 failures"
    )
    assert not run.answers.filter(ok=True).exists()


def test_a_runs_requests_go_from_its_named_workers(owner_access, llm_config, synthetic, monkeypatch):
    names = set()
    complete = ChatClient.complete

    def complete_and_note(client, messages):
        names.add(threading.current_thread().name)
        return complete(client, messages)

    monkeypatch.setattr(ChatClient, "complete", complete_and_note)
    run = do_process_discovery(start_discovery(owner_access).pk)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    assert names and all(name.startswith(f"discovery-{run.pk}_") for name in names)
    assert len(names) <= llm_config.concurrency
