"""Thin Celery wrappers: take ids, call a service. Idempotent, so a retried or duplicated task is harmless."""

from __future__ import annotations

from celery import shared_task

from annotator.services.imports import do_run_import_job


@shared_task(name="annotator.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> str:
    return do_run_import_job(job_id).status
