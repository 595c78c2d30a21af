"""Turn uploaded files into a queued import job (files stored on disk, the job run by Celery)."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotator.models import Project
from traces import importers
from traces.models import ImportJob

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
    from annotator.tasks import run_import_job

    with transaction.atomic():
        job = ImportJob.objects.create(
            batch_name=batch_name.strip(),
            format=fmt,
            files=stored,
            options={"project": project.slug, "ignore_unknown_modes": ignore_unknown_modes},
            bytes_total=sum(item["size"] for item in stored),
            created_by=user,
        )
        run_import_job.delay_on_commit(job.pk)
    return job


def jobs_for_project(project: Project):
    return ImportJob.objects.filter(options__project=project.slug).select_related("created_by", "batch")
