"""Synthetic traces with planted near-duplicates (tests/similar): a target trace, three copies of it with a
word or two changed, and noise traces about other things, all generated here from a fixed seed."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from django.test import Client

from annotator.models import LLMConfig
from annotator.similar.service import do_build, do_request_build, forget_cached_indexes
from tests.factories import BatchFactory, TraceFactory
from tests.llm.fake_server import FakeChatServer
from traces.models import Step, Trace

TOPICS = {
    "kube": "kubectl pod namespace deployment rollout helm chart ingress node replica",
    "sql": "select join index table postgres vacuum query planner column schema",
    "web": "browser click button page form login cookie selector scroll navigate",
    "math": "integral derivative matrix eigenvalue proof lemma theorem vector scalar",
    "mail": "inbox reply forward attachment subject sender draft thread archive label",
}
TARGET_STEPS = [
    "open the flaky billing service dashboard and read the latency graph",
    "call grafana with query p99 latency billing payments for the last hour",
    "the agent restarts the payments worker although the alert says the database is saturated",
    "retry the restart three times and report success without checking the graph again",
]


@dataclass
class Planted:
    target: Trace
    twins: list[Trace]  # near-duplicates of the target, most alike first
    noise: list[Trace]

    @property
    def all(self) -> list[Trace]:
        return [self.target, *self.twins, *self.noise]


def make_trace(batch, external_id: str, contents: list[str], **fields) -> Trace:
    trace = TraceFactory(batch=batch, external_id=external_id, step_count=len(contents), **fields)
    Step.objects.bulk_create(
        Step(trace=trace, index=i, kind="message", content=text) for i, text in enumerate(contents)
    )
    return trace


def noise_steps(rng: random.Random, topic: str, n: int = 4) -> list[str]:
    words = TOPICS[topic].split()
    return [" ".join(rng.choice(words) for _ in range(12)) for _ in range(n)]


def twin_steps(changes: int, rng: random.Random) -> list[str]:
    """The target's steps with `changes` words replaced by unrelated ones."""
    steps = [step.split() for step in TARGET_STEPS]
    for _ in range(changes):
        step = rng.randrange(len(steps))
        steps[step][rng.randrange(len(steps[step]))] = rng.choice(["zebra", "violin", "harbour", "meadow"])
    return [" ".join(words) for words in steps]


@pytest.fixture
def planted(project) -> Planted:
    rng = random.Random(33)
    batch = BatchFactory(name="planted")
    project.batches.add(batch)
    target = make_trace(batch, "target", TARGET_STEPS, outcome="failure", model="gpt-4o")
    twins = [
        make_trace(batch, "twin-1", twin_steps(1, rng), outcome="failure", model="gpt-4o"),
        make_trace(batch, "twin-2", twin_steps(3, rng), outcome="success", model="gpt-4o"),
        make_trace(batch, "twin-3", twin_steps(5, rng), outcome="failure", model="claude"),
    ]
    noise = [
        make_trace(
            batch,
            f"noise-{i}",
            noise_steps(rng, topic),
            outcome=rng.choice(["failure", "success"]),
            model="mistral",
        )
        for i, topic in enumerate(list(TOPICS) * 6)
    ]
    return Planted(target, twins, noise)


def build(project):
    """Build the representation here (the task a worker would run), and return it."""
    started = do_request_build(project)
    return do_build(started.pk)


@pytest.fixture(autouse=True)
def _fresh_index_cache():
    """Indexes are cached per process by (project, version): tests reuse primary keys."""
    forget_cached_indexes()
    yield
    forget_cached_indexes()


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def embeddings_server(settings, project):
    """The project's endpoint is the local stand-in, and its LLM settings name an embeddings model."""
    server = FakeChatServer().start()
    settings.LLM_ALLOWED_BASE_URLS = [server.base_url]
    LLMConfig.objects.create(
        project=project,
        base_url=server.base_url,
        model="chat-model",
        embeddings_model="embed-small",
        requests_per_minute=1000,
        timeout_seconds=5,
    )
    yield server
    server.stop()
