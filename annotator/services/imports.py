"""Import traces (and the labels inside them) into a batch and, optionally, a project, as one unit.

The CLI, the upload page and the API all come through here; large imports run it in a Celery task with
progress kept in the cache (the import's own transaction is invisible to other connections until it
commits, so progress cannot live on the job row).
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotator.models import Project
from annotator.services.label_import import (
    IncomingAnnotation,
    LabelImportError,
    LabelImportResult,
    do_import_annotations,
)
from traces.models import ImportJob, Trace
from traces.services import FileResult, ImportFailed, ImportResult, ProgressCallback, do_import_files

log = logging.getLogger(__name__)


def do_import_traces(
    files: list[tuple[Path | str, str]],
    *,
    batch_name: str,
    fmt: str | None = None,
    user=None,
    project: Project | None = None,
    ignore_unknown_modes: bool = False,
    progress: ProgressCallback | None = None,
    source_options: dict | None = None,
) -> tuple[ImportResult, LabelImportResult | None]:
    """All or nothing: traces, the project link, embedded labels and new assignments commit together.

    `source_options` (columns, split, config) go to dataset sources (see traces.services)."""
    with transaction.atomic():
        result = do_import_files(
            files,
            batch_name=batch_name,
            fmt=fmt,
            user=user,
            progress=progress,
            keep_annotations=project is not None,
            source_options=source_options,
        )
        if project is None:
            return result, None
        project.batches.add(result.batch)
        try:
            labels = do_import_annotations(
                project,
                _incoming(result),
                ignore_unknown_modes=ignore_unknown_modes,
                actor=user,
            )
        except LabelImportError as error:
            result.files.append(FileResult(name="labels", error=str(error)))
            raise ImportFailed(result) from error
        from annotator.services.assignment import do_assign

        do_assign(project)
    return result, labels


def _incoming(result: ImportResult):
    traces = Trace.objects.only("id", "external_id", "step_count").in_bulk(
        [tid for tid, _, _ in result.annotations]
    )
    for trace_id, external_id, records in result.annotations:
        for record in records:
            yield IncomingAnnotation(trace=traces[trace_id], record=record, where=f"trace {external_id!r}")


def progress_key(job_id: int) -> str:
    return f"import-progress:{job_id}"


def job_progress(job: ImportJob) -> dict:
    """Live progress of a running job (from the cache) or the final state (from the row)."""
    live = cache.get(progress_key(job.pk)) if job.status == ImportJob.Status.RUNNING else None
    bytes_done = live["bytes"] if live else job.bytes_done
    records = live["records"] if live else job.records_done
    percent = (
        100
        if job.status == ImportJob.Status.SUCCEEDED
        else (min(99, int(100 * bytes_done / job.bytes_total)) if job.bytes_total else 0)
    )
    return {
        "id": job.pk,
        "status": job.status,
        "batch": job.batch_name,
        "percent": percent,
        "records": records,
        "bytes_done": bytes_done,
        "bytes_total": job.bytes_total,
        "summary": job.summary,
        "errors": job.errors,
    }


def do_run_import_job(job_id: int) -> ImportJob:
    """Run a queued job once (idempotent: a finished job is left alone, so a retried task is harmless)."""
    claimed = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED).update(
        status=ImportJob.Status.RUNNING
    )
    job = ImportJob.objects.get(pk=job_id)
    if not claimed:
        return job
    files = [(Path(item["path"]), item["name"]) for item in job.files]
    project = (
        Project.objects.filter(slug=job.options.get("project")).first()
        if job.options.get("project")
        else None
    )

    reached = {"records": 0}

    def progress(bytes_done: int, records: int) -> None:
        reached["records"] = records
        cache.set(progress_key(job_id), {"bytes": bytes_done, "records": records}, timeout=24 * 3600)

    try:
        result, labels = do_import_traces(
            files,
            batch_name=job.batch_name,
            fmt=job.format or None,
            user=job.created_by,
            project=project,
            ignore_unknown_modes=job.options.get("ignore_unknown_modes", False),
            progress=progress,
        )
    except ImportFailed as failure:
        job.status = ImportJob.Status.FAILED
        job.errors = [{"file": f.name, "error": f.error} for f in failure.result.files if f.error]
        job.summary = failure.result.as_dict()
    except (MemoryError, RecursionError) as error:
        # Input the limits did not catch: this job fails, the worker lives on. Re-raised, a MemoryError
        # makes Celery's pool give up on the whole worker.
        log.warning("import job %s ran out of %s", job_id, type(error).__name__)
        job.status = ImportJob.Status.FAILED
        job.errors = [{"file": _file_names(files), "error": _resource_message(error, reached["records"])}]
    except Exception as error:  # an unexpected bug must still end the job visibly, then surface
        log.exception("import job %s crashed", job_id)
        job.status = ImportJob.Status.FAILED
        job.errors = [{"file": "", "error": f"internal error: {error}"}]
        job.finished_at = timezone.now()
        job.save()
        raise
    else:
        job.status = ImportJob.Status.SUCCEEDED
        job.batch = result.batch
        job.summary = {**result.as_dict(), "labels": labels.as_dict() if labels else None}
        job.records_done = result.traces + result.duplicates
        job.bytes_done = job.bytes_total
    job.finished_at = timezone.now()
    job.save()
    _remove_uploads(files)
    return job


def _file_names(files: list[tuple[Path, str]]) -> str:
    return ", ".join(name for _, name in files)


def _resource_message(error: BaseException, records: int) -> str:
    what = "memory" if isinstance(error, MemoryError) else "stack (a record nested too deeply)"
    return (
        f"the import ran out of {what} after about {records} records and was stopped; nothing was "
        "imported. Split the file, or ask the administrator about the IMPORT_MAX_* limits."
    )


def _remove_uploads(files: list[tuple[Path, str]]) -> None:
    for path, _ in files:
        path.unlink(missing_ok=True)
