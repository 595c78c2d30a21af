"""A discovery run's embedding step is a step the owner can watch and interrupt without losing it: the page
and the API say "Embedding analyses" with the batches done of all, and a run stopped or capped while
embedding keeps the batches that came back, so a resumed run sends no embedding request for them."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.discovery.process import do_process_discovery
from annotator.discovery.service import do_resume_discovery, do_stop_discovery
from annotator.discovery.synthetic import PLANTED
from annotator.llm.client import ChatClient
from annotator.models import DiscoveryAnswer, DiscoveryRun
from tests.discovery.conftest import CHAT_TOKENS, EMBED_BATCH, EMBED_TOKENS, start_discovery


def _planted(run: DiscoveryRun) -> bool:
    return sorted(c["code"] for c in run.candidates) == sorted(p.code for p in PLANTED)


def test_a_resumed_run_sends_no_embedding_request_for_batches_already_embedded(
    owner_access, embedding, synthetic, model, monkeypatch
):
    run = start_discovery(owner_access)
    embed = ChatClient.embed

    def embed_then_stop_at_the_third(client, texts, name):
        found = embed(client, texts, name)
        if model.embed_requests == 3:
            do_stop_discovery(run)  # the owner presses stop while the third batch is out
        return found

    monkeypatch.setattr(ChatClient, "embed", embed_then_stop_at_the_third)
    stopped = do_process_discovery(run.pk)
    assert (stopped.status, stopped.phase) == (DiscoveryRun.Status.STOPPED, DiscoveryRun.Phase.EMBED)
    batches = stopped.total
    assert batches > 3 and stopped.done == 3, "the three batches that came back are kept"
    assert stopped.answers.filter(phase=DiscoveryAnswer.Phase.EMBED).count() == 3

    monkeypatch.setattr(ChatClient, "embed", embed)
    assert do_resume_discovery(stopped, enqueue=False)
    done = do_process_discovery(run.pk)
    assert done.status == DiscoveryRun.Status.SUCCEEDED, done.error
    assert model.embed_requests == batches, "the resumed run asked only for the batches it lacked"
    assert _planted(done), "the kept vectors group the analyses as a run embedded in one go does"
    assert not done.answers.filter(phase=DiscoveryAnswer.Phase.EMBED).exists(), (
        "the vectors served, then went"
    )


def test_a_run_capped_while_embedding_resumes_from_the_batch_it_reached(
    owner_access, embedding, synthetic, model, standin
):
    embedding.token_cap = (
        60 * CHAT_TOKENS + 2 * EMBED_BATCH * EMBED_TOKENS
    )  # two batches fit, the third goes over
    embedding.save()
    capped = do_process_discovery(start_discovery(owner_access).pk)
    assert (capped.status, capped.stop_reason) == (DiscoveryRun.Status.STOPPED, "token cap reached")
    assert (capped.phase, capped.done, model.embed_requests) == (DiscoveryRun.Phase.EMBED, 2, 2)

    embedding.token_cap = 0
    embedding.save()
    assert do_resume_discovery(capped, enqueue=False)
    done = do_process_discovery(capped.pk)
    assert done.status == DiscoveryRun.Status.SUCCEEDED, done.error
    assert model.embed_requests == capped.total, "the two kept batches were not sent again"
    answered = sum(done.answers.values_list("tokens", flat=True))
    assert done.tokens_used == answered + model.embedded * EMBED_TOKENS, "every batch counted once"
    assert _planted(done)


def test_the_page_and_the_api_show_the_embedding_step_and_its_batches(
    project, owner, owner_access, embedding, synthetic, model, monkeypatch
):
    run = start_discovery(owner_access)
    api, web = APIClient(), Client()
    api.force_authenticate(owner)
    web.force_login(owner)
    seen = []
    embed = ChatClient.embed

    def embed_and_look(client, texts, name):
        # While a batch is out, the owner looks at the run's progress on the API and on the page.
        body = api.get(reverse("api-discovery-run", args=[project.slug, run.pk])).json()
        page = web.get(reverse("discovery-run", args=[project.slug, run.pk]), HTTP_HX_REQUEST="true")
        seen.append((body["phase"], body["progress"], page.content.decode()))
        return embed(client, texts, name)

    monkeypatch.setattr(ChatClient, "embed", embed_and_look)
    done = do_process_discovery(run.pk)
    assert done.status == DiscoveryRun.Status.SUCCEEDED, done.error
    batches = len(seen)
    assert batches == model.embed_requests > 1
    for n, (phase, progress, page) in enumerate(seen):
        assert phase == "embed"
        assert progress["step"] == "embed" and progress["step_label"] == "Embedding analyses"
        assert (progress["unit"], progress["done"], progress["total"]) == ("batches", n, batches)
        assert f"Embedding analyses: {n} of {batches} batches" in page
    after = api.get(reverse("api-discovery-run", args=[project.slug, run.pk])).json()["progress"]
    assert (after["step"], after["unit"]) == ("done", "requests")


def test_without_an_embeddings_model_there_is_no_embedding_step(owner_access, llm_config, synthetic, model):
    run = do_process_discovery(start_discovery(owner_access).pk)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    assert model.embed_requests == 0 and run.results["grouped_by"] == "tf-idf"
