"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
application = get_wsgi_application()

# A web process sends tasks on most submits: load Celery and the tasks now rather than in the first
# request that needs them (commands load them lazily, see annotator.services.enqueue.celery_app).
from annotator.services.enqueue import celery_app  # noqa: E402

celery_app()
