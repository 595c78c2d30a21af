"""Project package: settings, URLs and the annotation workflow.

Deliberately empty: the pure parts (`annotator.agreement`, `annotator.signatures`, `annotator.llm.parse`
and `prompt`, `annotator.assignment_strategy`) must import without Django or Celery. The Celery app
lives in `annotator.celery` (`celery -A annotator.celery worker`) and is loaded on the first task sent
(`annotator.services.enqueue.celery_app`; web processes load it at start in `annotator.wsgi`).
"""
