"""LLM rater tests: a local chat-completions stand-in, a project with traces, and settings pointing at it."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from annotator.llm.client import pause_key
from annotator.models import LLMConfig
from annotator.services.llm.labeller import limiter_key
from tests.factories import BatchFactory, trace_with_steps
from tests.llm.fake_server import FakeChatServer

MODEL = "qwen2.5-7b"
RATER = "llm:qwen2.5-7b"


@pytest.fixture
def chat_server(settings):
    """The stand-in listens on 127.0.0.1, which the rule refuses: the administrator's setting allows it."""
    server = FakeChatServer().start()
    settings.LLM_ALLOWED_BASE_URLS = [server.base_url]
    yield server
    server.stop()


@pytest.fixture
def batch(project):
    batch = BatchFactory(name="run-1")
    project.batches.add(batch)
    return batch


@pytest.fixture
def traces(batch):
    return [trace_with_steps(6, batch=batch) for _ in range(3)]


@pytest.fixture
def llm_config(project, chat_server):
    config = LLMConfig.objects.create(
        project=project,
        base_url=chat_server.base_url,
        model=MODEL,
        api_key_env="",
        requests_per_minute=1000,
        # One request at a time: scripted replies then reach the traces in order. Tests of concurrency
        # raise it.
        concurrency=1,
        timeout_seconds=5,
        token_cap=0,
    )
    # A Retry-After pause is kept in the shared cache by time: one left by an earlier session's fake clock
    # under the same primary key would hold this test's requests.
    cache.delete(pause_key(limiter_key(config)))
    return config


class FakeClock:
    """time.time and time.sleep for tests: sleeping advances the clock at once and is recorded."""

    def __init__(self, start: float = 1_000_000.0):
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()
