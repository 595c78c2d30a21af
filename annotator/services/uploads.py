"""Turn uploaded files into a queued import job (files stored on disk, the job run by Celery).

The stored files live only as long as the job: they are removed when it ends, whatever the ending
(annotator.services.imports.remove_uploads), including a job failed by the reconciliation.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotator.models import ImportJob, Project
from annotator.services.jobs import send_job
from traces import importers

MB = 1024 * 1024


class UploadError(ValueError):
    status = 400


class UploadTooLarge(UploadError):
    status = 413


def max_upload_bytes() -> int:
    return settings.IMPORT_MAX_UPLOAD_MB * MB


def upload_too_large_message(size: int) -> str:
    return (
        f"The upload is {size / MB:.1f} MB; at most {settings.IMPORT_MAX_UPLOAD_MB} MB can be sent at "
        "once (IMPORT_MAX_UPLOAD_MB). Send the files in several imports into the same batch."
    )


def check_upload_request(batch_name: str, fmt: str, files: list[UploadedFile]) -> None:
    # The guard middleware refuses a too-large request by its Content-Length; a chunked one has none.
    size = sum(upload.size or 0 for upload in files)
    if size > max_upload_bytes():
        raise UploadTooLarge(upload_too_large_message(size))
    if not batch_name.strip():
        raise UploadError("Name the batch these traces go into.")
    if fmt and fmt not in importers.FORMATS:
        raise UploadError(
            f"Unknown format {fmt!r}; choose one of {', '.join(importers.FORMATS)} or auto-detect."
        )
    if not files:
        raise UploadError("Choose at least one file.")


def do_queue_import(
    project: Project,
    *,
    batch_name: str,
    fmt: str,
    files: list[UploadedFile],
    user,
    ignore_unknown_modes: bool,
) -> ImportJob:
    """Store the files and queue the job; the task starts only after the job row is committed."""
    if project.archived_at is not None:
        raise UploadError("This project is archived: it takes no new imports (an owner can unarchive it).")
    check_upload_request(batch_name, fmt, files)
    folder = Path(settings.UPLOAD_DIR) / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    stored = []
    for upload in files:
        safe_name = Path(upload.name).name or "upload"
        path = folder / f"{len(stored):03d}-{safe_name}"
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        stored.append({"path": str(path), "name": safe_name, "size": path.stat().st_size})
    with transaction.atomic():
        job = ImportJob.objects.create(
            project=project,
            batch_name=batch_name.strip(),
            format=fmt,
            files=stored,
            options={"ignore_unknown_modes": ignore_unknown_modes},
            bytes_total=sum(item["size"] for item in stored),
            created_by=user,
        )
        # After commit; with the task queue down the job fails at once with a reason (and its files go).
        send_job(ImportJob, job.pk)
    return job


def jobs_for_project(project: Project):
    return ImportJob.objects.filter(project=project).select_related("created_by", "batch")
