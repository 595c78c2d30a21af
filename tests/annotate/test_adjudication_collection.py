"""With a worker, the traces a busy project completes close together are checked for the adjudication
queue by one task: collected in Redis, then one collection sends them all to one check. When the cache
cannot collect them, each check goes out on its own as before; when the collection cannot be queued, the
check runs inline. Needs a real Redis (REDIS_URL or the local default port)."""

from __future__ import annotations

import os
import secrets
import socket

import pytest
import redis

from annotator.cache import ResilientRedisCache
from annotator.models import AdjudicationItem
from annotator.services import followups
from tests.services import missing

COLLECT, CHECK = followups.COLLECT_TASK, followups.CHECK_TASK


def redis_cache(url: str) -> ResilientRedisCache:
    options = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
    return ResilientRedisCache(url, {"KEY_PREFIX": f"test-{secrets.token_hex(4)}", "OPTIONS": options})


@pytest.fixture
def real_cache(monkeypatch, project):
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
    except redis.RedisError as error:
        missing("Redis", f"Could not reach {url} ({error}); set REDIS_URL.")
    cache = redis_cache(url)
    monkeypatch.setattr(followups, "cache", cache)
    yield cache
    cache.delete(followups.collect_key(project.pk))
    cache.take_set(followups.pending_key(project.pk))


@pytest.fixture
def sent(monkeypatch):
    """Tasks sent, as (name, args, countdown); a worker is running (not eager)."""
    tasks = []

    def record(name, *args, countdown=None, on_failure=None, **options):
        tasks.append((name, args, countdown))

    monkeypatch.setattr(followups, "is_eager", lambda: False)
    monkeypatch.setattr(followups, "enqueue", record)
    return tasks


@pytest.fixture
def worth_checking(project, traces):
    """Traces whose check can change something (an item is there already), as after their last submit."""
    for trace in traces:
        AdjudicationItem.objects.create(project=project, trace=trace, status="open")
    return [trace.pk for trace in traces]


def test_traces_completed_close_together_are_checked_by_one_task(
    project, worth_checking, real_cache, sent, settings
):
    settings.ADJUDICATION_COLLECT_SECONDS = 1
    for trace_id in worth_checking:  # three submits, a moment apart
        followups.after_annotations_changed(project.pk, [trace_id])
    assert [task for task in sent if task[0] != "annotator.agreement.refresh_reports"] == [
        (COLLECT, (project.pk,), 1)
    ]
    sent.clear()

    assert followups.collect_pending(project.pk) == len(worth_checking)
    assert sent == [(CHECK, (project.pk, worth_checking), None)]
    assert followups.collect_pending(project.pk) == 0  # taken: nothing is checked twice for nothing

    sent.clear()
    followups.after_annotations_changed(project.pk, worth_checking[:1])  # after the collection: a new one
    assert (COLLECT, (project.pk,), 1) in sent
    assert followups.collect_pending(project.pk) == 1


def test_without_the_cache_each_check_is_sent_on_its_own(project, worth_checking, sent, monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    monkeypatch.setattr(followups, "cache", redis_cache(f"redis://127.0.0.1:{closed}/0"))
    followups.after_annotations_changed(project.pk, worth_checking[:1])
    followups.after_annotations_changed(project.pk, worth_checking[1:])
    checks = [task for task in sent if task[0] in (CHECK, COLLECT)]
    assert checks == [
        (CHECK, (project.pk, worth_checking[:1]), None),
        (CHECK, (project.pk, worth_checking[1:]), None),
    ]


def test_a_collection_the_queue_refuses_is_checked_inline_and_tried_again(
    project, worth_checking, real_cache, monkeypatch
):
    def refuse(name, *args, on_failure=None, **options):
        if name == COLLECT:
            on_failure(OSError("broker down"))

    inline = []
    monkeypatch.setattr(followups, "is_eager", lambda: False)
    monkeypatch.setattr(followups, "enqueue", refuse)
    monkeypatch.setattr(followups, "_check_inline", lambda project_id, ids: inline.append(ids))
    followups.after_annotations_changed(project.pk, worth_checking[:1])
    assert inline == [worth_checking[:1]]
    assert real_cache.get(followups.collect_key(project.pk)) is None  # the next submit schedules again
    followups.after_annotations_changed(project.pk, worth_checking[1:2])
    assert inline == [worth_checking[:1], worth_checking[1:2]]
