"""Discovery tests: a project on MAST with synthetic traces (three planted patterns among noise) and LLM
settings pointing at the deterministic stand-in model (tests/discovery/standin.py)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from annotator.access import ProjectAccess
from annotator.discovery.synthetic import planted_traces, store_traces
from annotator.llm.client import pause_key
from annotator.models import LLMConfig
from annotator.services.llm.labeller import limiter_key
from tests.discovery.standin import DiscoveryModel, DiscoveryStandIn
from tests.factories import BatchFactory

RATERS = ["rater-a", "rater-b", "rater-c"]


@pytest.fixture
def model():
    return DiscoveryModel()


@pytest.fixture
def standin(settings, model):
    with DiscoveryStandIn(model) as server:
        settings.LLM_ALLOWED_BASE_URLS = [server.base_url]
        yield server


@pytest.fixture
def llm_config(project, standin):
    config = LLMConfig.objects.create(
        project=project,
        base_url=standin.base_url,
        model="namer",
        requests_per_minute=100_000,
        concurrency=4,
        timeout_seconds=10,
        token_cap=0,
    )
    cache.delete(pause_key(limiter_key(config)))
    return config


@pytest.fixture
def synthetic(project):
    batch = BatchFactory(name="synthetic")
    project.batches.add(batch)
    traces = planted_traces(90, per_pattern=14, seed=3)
    rows = store_traces(batch, traces)
    return {t.external_id: (row, t) for row, t in zip(rows, traces, strict=True)}


@pytest.fixture
def owner_access(project, owner):
    return ProjectAccess.of(owner, project)


CHAT_TOKENS = 550  # what the stand-in books for an answer
EMBED_TOKENS = 10  # and for each text it embeds
EMBED_BATCH = 4  # several embedding batches from a few dozen analyses


@pytest.fixture
def embedding(llm_config, monkeypatch):
    """The project's endpoint with an embeddings model: analyses are grouped by their embeddings, sent
    EMBED_BATCH texts a request."""
    from annotator.discovery import embedding as embedding_step

    llm_config.embeddings_model = "embedder"
    llm_config.save()
    monkeypatch.setattr(embedding_step, "EMBED_BATCH", EMBED_BATCH)
    return llm_config


def start_discovery(access):
    """A discovery run over the synthetic batch (60 analysed, 30 gated by the three raters), not enqueued."""
    from annotator.discovery.service import do_start_discovery

    return do_start_discovery(
        access, scope="batch:synthetic", raters=RATERS, sample=60, gate_sample=30, enqueue=False
    )
