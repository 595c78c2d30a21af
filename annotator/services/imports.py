"""Import traces (and the labels inside them) into a batch and, optionally, a project, as one unit.

The CLI, the upload page and the API all come through here; large imports run it in a Celery task with
progress kept in the cache (the import's own transaction is invisible to other connections until it
commits, so progress cannot live on the job row).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.batches import visible_batches
from annotator.models import ImportJob, Project
from annotator.raters import rater_source
from annotator.search.indexing import schedule_indexing
from annotator.services import project_traces
from annotator.services.assignment import do_assign
from annotator.services.jobs import heartbeat, remove_uploads, stale_before
from annotator.services.label_import import (
    PER_MODE_VOTE_FORMATS,
    IncomingAnnotation,
    LabelImportError,
    LabelImportResult,
    do_import_annotations,
    voted_modes,
)
from traces.importers import storable
from traces.models import Trace
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
    sources: Mapping[str, str] | None = None,
    rater_map: Mapping[str, str] | None = None,
) -> tuple[ImportResult, LabelImportResult | None]:
    """All or nothing: traces, the project link, embedded labels and new assignments commit together.

    Batches and duplicates are looked up only among the batches `user` may see (annotator.batches; `user`
    None is the operator at the command line). With a project, the project holds exactly the traces of
    these files afterwards, new or already imported (so the labels they carry land on the project's own
    traces), and nothing else of the batches holding them; a batch this import creates is followed by the
    project as a whole (annotator.models.ProjectTrace). `sources` maps a file's display name
    to the source its raters are namespaced by (default: the file's name); `rater_map` maps a rater to a
    real account (staff only). `source_options` (columns, split, config) go to dataset sources."""
    scope = visible_batches(user)
    # A project import extends a batch of that name the project holds (or one no project holds yet), never
    # another project's batch of the same name.
    named_in = None if project is None else scope.filter(Q(projects=project) | Q(projects=None))
    with transaction.atomic():
        result = do_import_files(
            files,
            batch_name=batch_name,
            fmt=fmt,
            user=user,
            progress=progress,
            keep_annotations=project is not None,
            source_options=source_options,
            scope=scope,
            named_in=named_in,
            # The project's own traces are found already imported even in a batch this user cannot see
            # (another owner's import added them): a co-owner's import of the same file adds no copy.
            held=None if project is None else Trace.objects.in_project(project),
        )
        if result.traces:
            schedule_indexing()  # the full-text search rows, out of the import's path (traces 0012)
        if project is None:
            return result, None
        _hold_imported_traces(project, result)
        try:
            labels = do_import_annotations(
                project,
                _incoming(result, sources or {}),
                ignore_unknown_modes=ignore_unknown_modes,
                actor=user,
                rater_map=rater_map,
            )
        except LabelImportError as error:
            result.files.append(FileResult(name="labels", error=storable.shown(str(error))))
            raise ImportFailed(result) from error
        do_assign(project)
        if result.traces or result.added_to_project:
            # The new traces' vectors for similar traces, after commit. Imported here: it brings numpy and
            # scikit-learn's neighbours, which an import command's start-up never needs.
            from annotator.similar.service import schedule_update

            schedule_update(project)
    return result, labels


def _hold_imported_traces(project: Project, result: ImportResult) -> None:
    """The project holds the files' traces: the already imported ones (counted in the summary when new to
    the project) and the new ones, through the batch they went into. A batch made by this import holds just
    them, so the project follows it whole; new traces in a batch it follows joined it already (the
    membership triggers); in an existing batch it does not follow, only this import's traces are added."""
    result.added_to_project = project_traces.add_traces(project, result.duplicate_traces)
    batch = result.batch
    if batch is None or not result.traces:
        return
    if result.new_batch:
        project.batches.add(batch)
    elif not project.batches.filter(pk=batch.pk).exists():
        project_traces.add_batch_traces_from(project, batch, result.first_trace_id)


def _incoming(result: ImportResult, sources: Mapping[str, str]):
    formats = {f.name: f.format for f in result.files}
    # A per-mode-vote file's modes per trace are kept in the trace's answer key (`failure_modes`).
    fields = ["id", "external_id", "step_count"]
    if PER_MODE_VOTE_FORMATS & set(formats.values()):
        fields.append("answer_key")
    traces = Trace.objects.only(*fields).in_bulk([tid for tid, _, _, _ in result.annotations])
    for trace_id, external_id, records, name in result.annotations:
        source = sources.get(name) or rater_source(name)
        trace = traces[trace_id]
        fmt = formats.get(name, "")
        voted = voted_modes(fmt, trace.answer_key) if fmt in PER_MODE_VOTE_FORMATS else None
        for record in records:
            yield IncomingAnnotation(
                trace=trace, record=record, where=f"{name}, trace {external_id!r}", source=source, voted=voted
            )


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
        "error": job.error,
        "errors": job.errors,
    }


def do_run_import_job(job_id: int) -> ImportJob:
    """Run a queued job once.

    Idempotent: a finished job is left alone, and a job another live worker is running too. A running
    job whose heartbeat stopped lost its worker; its import rolled back with it (all or nothing), so a
    redelivered task claims it again and starts over. Whatever the ending, the stored files are removed."""
    if not ImportJob.claim(job_id, stale_before=stale_before()):
        return ImportJob.objects.get(pk=job_id)
    job = ImportJob.objects.select_related("project", "created_by").get(pk=job_id)
    files = [(Path(item["path"]), item["name"]) for item in job.files]

    reached = {"records": 0}

    def progress(bytes_done: int, records: int) -> None:
        reached["records"] = records
        cache.set(progress_key(job_id), {"bytes": bytes_done, "records": records}, timeout=24 * 3600)

    try:
        with heartbeat(ImportJob, job_id):
            result, labels = do_import_traces(
                files,
                batch_name=job.batch_name,
                fmt=job.format or None,
                user=job.created_by,
                project=job.project,
                ignore_unknown_modes=job.options.get("ignore_unknown_modes", False),
                progress=progress,
            )
    except ImportFailed as failure:
        job.status = ImportJob.Status.FAILED
        job.errors = [{"file": f.name, "error": f.error} for f in failure.result.files if f.error]
        job.error = "Nothing was imported: fix the files listed and try again."
        job.summary = failure.result.as_dict()
    except (MemoryError, RecursionError) as error:
        # Input the limits did not catch: this job fails, the worker lives on. Re-raised, a MemoryError
        # makes Celery's pool give up on the whole worker.
        log.warning("import job %s ran out of %s", job_id, type(error).__name__)
        job.status = ImportJob.Status.FAILED
        job.errors = [{"file": _file_names(files), "error": _resource_message(error, reached["records"])}]
        job.error = "Nothing was imported: the import ran out of resources."
    except Exception as error:  # an unexpected bug must still end the job visibly, then surface
        log.exception("import job %s crashed", job_id)
        job.status = ImportJob.Status.FAILED
        job.error = f"Internal error ({type(error).__name__}); nothing was imported."
        job.errors = [{"file": "", "error": job.error}]
        job.finished_at = timezone.now()
        job.save()
        remove_uploads(job)
        raise
    else:
        job.status = ImportJob.Status.SUCCEEDED
        job.batch = result.batch
        job.summary = {**result.as_dict(), "labels": labels.as_dict() if labels else None}
        job.records_done = result.traces + result.duplicates
        job.bytes_done = job.bytes_total
    job.finished_at = timezone.now()
    job.save()
    remove_uploads(job)
    return job


def _file_names(files: list[tuple[Path, str]]) -> str:
    return ", ".join(name for _, name in files)


def _resource_message(error: BaseException, records: int) -> str:
    what = "memory" if isinstance(error, MemoryError) else "stack (a record nested too deeply)"
    return (
        f"the import ran out of {what} after about {records} records and was stopped; nothing was "
        "imported. Split the file, or ask the administrator about the IMPORT_MAX_* limits."
    )
