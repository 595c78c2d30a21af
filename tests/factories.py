"""factory_boy factories: tests build exactly the world they need."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from annotator.models import Membership, Project
from traces.models import Batch, Step, Trace

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.django.Password(PASSWORD)


class BatchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Batch

    name = factory.Sequence(lambda n: f"batch-{n}")
    format = "native"


class TraceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Trace

    batch = factory.SubFactory(BatchFactory)
    external_id = factory.Sequence(lambda n: f"trace-{n}")
    content_hash = factory.Sequence(lambda n: f"{n:064x}")
    task = "Book the cheapest flight from SFO to JFK on Friday."
    system = "AG2"
    model = "gpt-4o"
    benchmark = "synthetic"
    outcome = "failure"


class StepFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Step

    trace = factory.SubFactory(TraceFactory)
    index = factory.Sequence(lambda n: n)
    agent = "planner"
    role = "assistant"
    kind = "message"
    content = "Let me look at the flights."


def trace_with_steps(n_steps: int = 5, **kwargs) -> Trace:
    trace = TraceFactory(step_count=n_steps, **kwargs)
    Step.objects.bulk_create(
        Step(trace=trace, index=i, agent="planner" if i % 2 else "coder", kind="message", content=f"step {i}")
        for i in range(n_steps)
    )
    return trace


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda project: project.slug.replace("-", " ").title())


def add_member(project: Project, user, role: str) -> Membership:
    return Membership.objects.get_or_create(project=project, user=user, role=role)[0]


def api_token(user, **kwargs) -> str:
    """A new API token's key for `user` (only its digest is stored), for `Authorization: Token <key>`."""
    from annotator.models import ApiToken

    return ApiToken.issue(user, **kwargs)[1]
