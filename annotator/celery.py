"""The Celery app. Eager (inline) unless REDIS_URL is set; see settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="annotator.ping", ignore_result=False)
def ping(value: str) -> str:
    """Round trip used by the health check and the worker integration test."""
    return f"pong:{value}"
