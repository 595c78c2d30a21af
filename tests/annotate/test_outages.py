"""Redis down: the annotate page and its partials still answer, a submit is quick and still reaches the
adjudication queue (issue 11, point 6)."""

from __future__ import annotations

import socket

import pytest
from kombu.exceptions import OperationalError

from annotator.models import AdjudicationItem
from annotator.services import enqueue

app = enqueue.celery_app()

HX = {"HTTP_HX_REQUEST": "true"}


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def cache_down(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "annotator.cache.ResilientRedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }


@pytest.fixture
def broker_down(monkeypatch):
    monkeypatch.setattr(enqueue, "is_eager", lambda: False)

    def refuse(self, args=None, kwargs=None, **options):
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(type(app.tasks["annotator.adjudication.check_traces"]), "apply_async", refuse)


def test_the_annotate_page_and_step_partials_work_without_the_cache(client, slot_a, annotator_a, cache_down):
    client.force_login(annotator_a)
    assert client.get(f"/p/{slot_a.project.slug}/a/{slot_a.pk}/").status_code == 200
    trace_id = slot_a.trace_id
    assert client.get(f"/p/{slot_a.project.slug}/t/{trace_id}/steps/", **HX).status_code == 200
    assert client.get(f"/p/{slot_a.project.slug}/t/{trace_id}/steps/2/", **HX).status_code == 200


def test_submits_without_cache_or_queue_still_reach_adjudication(
    client,
    slot_a,
    slot_b,
    annotator_a,
    annotator_b,
    cache_down,
    broker_down,
    django_capture_on_commit_callbacks,
):
    for user, slot, label in ((annotator_a, slot_a, "FM-1.1"), (annotator_b, slot_b, "FM-2.1")):
        client.force_login(user)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                f"/p/{slot.project.slug}/a/{slot.pk}/submit/",
                {"version": "0", "elapsed": "5", "labels": label},
                **HX,
            )
        assert response.status_code == 204
    item = AdjudicationItem.objects.get(trace=slot_a.trace)  # the check ran inline: the queue was down
    assert item.status == "open"
