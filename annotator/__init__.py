"""Project package: settings, URLs, the Celery app, and the annotation workflow."""

from annotator.celery import app as celery_app

__all__ = ["celery_app"]
