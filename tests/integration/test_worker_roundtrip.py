"""A task really goes through Redis to a Celery worker and back (the worker is started by .ci/run)."""

from __future__ import annotations

import pytest

from tests.services import require_worker

pytestmark = pytest.mark.integration


def test_a_task_round_trips_through_redis_and_the_worker(settings):
    require_worker()
    from annotator.celery import app, ping

    assert not app.conf.task_always_eager
    assert ping.delay("hello").get(timeout=30) == "pong:hello"


def test_ci_runs_the_suite_on_postgresql(db):
    from django.db import connection

    from tests.services import IN_CI, missing

    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    assert connection.vendor == "postgresql" or not IN_CI
