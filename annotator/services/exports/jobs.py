"""Export jobs: build the dataset folder, zip it for download, push it to the Hub; progress on the row.

The Hub token (design). A token is a password: it must never rest in the database, a task message, a log
or an error page. So:

- ``HF_TOKEN`` in the server's environment is read at push time (`os.environ`), never copied anywhere.
- A token typed in the export form or sent to the API is put in the Django cache under the export's id
  (``export-token:<id>``) for at most EXPORT_TOKEN_TTL seconds (15 minutes by default); the Celery task
  gets only the export id, reads the token once and deletes the entry at once, before doing any work.
  With Redis the cache is shared by web and worker; eager (no Redis) runs in the same process. A job
  that starts after the entry expired fails with "start the export again", it never waits for a token.
- The Export row stores the options without the token; messages from the Hub are scrubbed of it; the
  form and API views are marked sensitive so Django's error reports mask it.
- The CLI never takes a token argument (shell history, `ps`): it uses HF_TOKEN.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from annotator.models import Export, Project
from annotator.models.jobs import JobStatus
from annotator.services.exports.card import render_card
from annotator.services.exports.dataset import (
    TRACES_SCHEMA,
    ConfigFiles,
    annotations_schema,
    gold_schema,
    mode_columns,
    write_config,
    zip_folder,
)
from annotator.services.exports.facts import Agreement, Tally, gather_facts
from annotator.services.exports.hub import HubError, push_folder
from annotator.services.exports.options import ExportOptions, ExportOptionsError
from annotator.services.exports.rows import (
    annotation_rows,
    gold_rows,
    pseudonyms_for,
    selected_traces,
    trace_rows,
)
from annotator.services.jobs import heartbeat, send_job, stale_before
from taxonomy.schema import dump_taxonomy
from taxonomy.services import version_to_spec
from traces.importers.hf_export import CONFIG_ANNOTATIONS, CONFIG_GOLD, CONFIG_TRACES

log = logging.getLogger(__name__)
Progress = Callable[[int, str], None]  # (percent, message)


@dataclass
class ExportSummary:
    folder: Path
    configs: list[ConfigFiles]
    tally: Tally
    agreement: Agreement

    def lines(self) -> list[str]:
        rows = ", ".join(f"{c.name} {c.rows:,} rows" for c in self.configs if c.rows)
        agreement = (
            f"agreement report #{self.agreement.report_id}"
            if self.agreement.results
            else f"no agreement report ({self.agreement.missing_reason})"
        )
        return [f"Wrote {rows or 'no rows'}", f"Card: {agreement}"]


def token_key(export_id: int) -> str:
    return f"export-token:{export_id}"


def exports_for(project: Project) -> QuerySet[Export]:
    return Export.objects.filter(project=project).select_related("created_by").order_by("-created_at", "-id")


def do_queue_export(project: Project, options: ExportOptions, *, user, token: str = "") -> Export:
    """Create the job and start it after commit; a typed token waits in the cache (see the module doc)."""
    token = (token or "").strip()
    if options.repo_id and not (token or os.environ.get("HF_TOKEN")):
        raise ExportOptionsError(
            ["Publishing needs a Hugging Face token: type one, or set HF_TOKEN on the server."]
        )
    with transaction.atomic():
        export = Export.objects.create(
            project=project, options=options.as_dict(), target_repo=options.repo_id, created_by=user
        )
        if token and options.repo_id:
            cache.set(token_key(export.pk), token, timeout=settings.EXPORT_TOKEN_TTL)
        send_job(Export, export.pk)  # after commit; with the queue down the export fails with a reason
    return export


def build_export(
    project: Project, options: ExportOptions, folder: Path, *, progress: Progress | None = None
) -> ExportSummary:
    """Write the dataset folder: parquet configs, README.md card, taxonomy.yaml. Reads live data in
    keyset pages (no long transaction), with the trace set pinned at the start so every annotation and
    gold row belongs to a written trace."""
    report = progress or (lambda percent, message: None)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    version = project.taxonomy_version
    columns = mode_columns(version.modes.order_by("order", "id").values_list("code", "name"))
    traces = selected_traces(project, options)
    last_id = traces.aggregate(last=Max("id"))["last"] or 0
    traces = traces.filter(id__lte=last_id)
    total = max(1, traces.count())
    names = pseudonyms_for(project, traces, options.real_names)
    tally, written = Tally(), set()

    def on_trace(row: dict) -> None:
        tally.trace(row)
        if options.gold_only:
            written.add(row["_id"])
        if tally.traces % 200 == 0:
            report(5 + int(70 * tally.traces / total), f"{tally.traces:,} of {total:,} traces written")

    report(2, f"Exporting {total:,} traces")
    configs = [
        write_config(
            folder,
            CONFIG_TRACES,
            TRACES_SCHEMA,
            trace_rows(traces, include_text=options.include_text),
            on_row=on_trace,
        )
    ]
    if not options.gold_only:
        report(76, "Writing annotations")
        rows = annotation_rows(project, traces, columns, names, include_text=options.include_text)
        configs.append(
            write_config(
                folder, CONFIG_ANNOTATIONS, annotations_schema(columns), rows, on_row=tally.annotation
            )
        )
    report(85, "Writing gold labels")
    gold = gold_rows(project, traces, columns, names)
    if options.gold_only:
        gold = (row for row in gold if row["_trace_id"] in written)
    configs.append(write_config(folder, CONFIG_GOLD, gold_schema(columns), gold, on_row=tally.gold))
    report(90, "Writing the dataset card (agreement report)")
    facts = gather_facts(project, options, columns, tally, configs)
    (folder / "README.md").write_text(render_card(facts), encoding="utf-8")
    taxonomy = yaml.safe_dump(dump_taxonomy(version_to_spec(version)), sort_keys=False, allow_unicode=True)
    (folder / "taxonomy.yaml").write_text(taxonomy, encoding="utf-8")
    return ExportSummary(folder=folder, configs=configs, tally=tally, agreement=facts.agreement)


class _JobLog:
    """Progress and log lines on the Export row, written with UPDATE (no transaction is held)."""

    def __init__(self, export: Export):
        self.export, self.lines = export, [line for line in export.log.splitlines() if line]
        self.percent = export.progress

    def __call__(self, percent: int, message: str) -> None:
        self.percent = max(self.percent, min(percent, 99))
        if message and (not self.lines or self.lines[-1] != message):
            self.lines.append(message)
        Export.objects.filter(pk=self.export.pk).update(
            progress=self.percent, log="\n".join(self.lines[-200:])
        )

    def finish(self, status: str, message: str, **fields) -> None:
        self.lines.append(message)
        Export.objects.filter(pk=self.export.pk).update(
            status=status,
            progress=100 if status == JobStatus.SUCCEEDED else self.percent,
            log="\n".join(self.lines[-200:]),
            error=message.removeprefix("Error: ") if status == JobStatus.FAILED else "",
            finished_at=timezone.now(),
            **fields,
        )


def export_folder(export: Export) -> Path:
    return Path(settings.EXPORT_DIR) / export.project.slug / str(export.pk)


def do_run_export(export_id: int, *, out_dir: Path | None = None) -> Export:
    """Run a queued export once (a finished or running one is left alone, so a duplicate task is harmless).

    With ``out_dir`` (the CLI) the folder is written there and not zipped; otherwise it is built under
    EXPORT_DIR, zipped for download, and removed once zipped and pushed."""
    claimed = Export.claim(export_id, stale_before=stale_before())
    export = Export.objects.select_related("project__taxonomy_version__taxonomy").get(pk=export_id)
    if not claimed:
        return export
    typed = cache.get(token_key(export_id))  # read once, deleted at once: see the module doc
    cache.delete(token_key(export_id))
    options = ExportOptions.from_dict(export.options)
    job = _JobLog(export)
    base = export_folder(export)
    folder = Path(out_dir) if out_dir is not None else base / "dataset"
    try:
        with heartbeat(Export, export_id):
            summary = build_export(export.project, options, folder, progress=job)
            for line in summary.lines():
                job(92, line)
            path = ""
            if out_dir is None:
                path = str(zip_folder(folder, base / f"{export.project.slug}-export-{export.pk}.zip"))
                Export.objects.filter(pk=export.pk).update(path=path)
                job(95, "Zipped for download")
            commit_url = ""
            if options.repo_id:
                commit_url = _push(folder, options, typed, job)
    except HubError as error:
        job.finish(JobStatus.FAILED, f"Error: {error.message}")
    except Exception as error:  # a bug must still end the job visibly; the traceback goes to the log
        log.exception("export %s crashed", export_id)
        job.finish(JobStatus.FAILED, f"Error: internal error ({type(error).__name__}: {error})")
    else:
        job.finish(JobStatus.SUCCEEDED, "Done", path=path or str(folder), commit_url=commit_url)
    finally:
        if out_dir is None and folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
    export.refresh_from_db()
    return export


def _push(folder: Path, options: ExportOptions, typed: str | None, job: _JobLog) -> str:
    token = typed or os.environ.get("HF_TOKEN", "")
    if not token:
        raise HubError(
            "No Hugging Face token: the token typed for this export expired before it ran (start the export "
            "again), and HF_TOKEN is not set on the server."
        )
    job(96, f"Pushing to {settings.HF_ENDPOINT}/datasets/{options.repo_id}")
    result = push_folder(
        folder,
        options.repo_id,
        token=token,
        endpoint=settings.HF_ENDPOINT,
        private=options.private,
        commit_message=options.commit_message,
    )
    job(99, f"Committed {result.commit_oid[:12]} to {options.repo_id}")
    return result.commit_url


def export_status(export: Export) -> dict:
    """The job's state for the API and the page (never the token: it is not on the row)."""
    lines = export.log.splitlines()
    error = next((line[len("Error: ") :] for line in reversed(lines) if line.startswith("Error: ")), "")
    return {
        "id": export.pk,
        "status": export.status,
        "progress": export.progress,
        "options": export.options,
        "target_repo": export.target_repo,
        "commit_url": export.commit_url,
        # A zip is kept even when the push after it failed: the owner can still download the dataset.
        "download_ready": export.path.endswith(".zip") and Path(export.path).is_file(),
        "log": lines[-20:],
        "error": (export.error or error) if export.status == JobStatus.FAILED else "",
        "created_at": export.created_at.isoformat(),
        "finished_at": export.finished_at.isoformat() if export.finished_at else None,
    }
