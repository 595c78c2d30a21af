import re
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.management.paths import TRACE_SUFFIXES, expand_paths
from annotator.management.reporting import report_label_details
from annotator.models import Project
from annotator.raters import rater_source
from annotator.services.imports import do_import_traces
from annotator.services.label_import import LabelImportError, parse_rater_map
from traces import importers
from traces.importers import HF_PREFIX, hf_dataset, storable
from traces.services import ImportFailed


class Command(BaseCommand):
    # The system checks import every view and URL module (a second or more at start-up) and find nothing
    # an import needs: `manage.py check` and the test suite run them.
    requires_system_checks = []

    help = (
        "Import agent traces from one or more files into a batch, all or nothing. The format is detected "
        "per file (or forced with --format); traces already imported (same content, whatever the format) are "
        "skipped, and an import that adds no trace creates no batch. With --project the batch joins that "
        "project, and so does every batch holding a trace found already imported; labels shipped inside the "
        "files (MAST human labels, Who&When attributions, native 'annotations') become annotations by "
        "imported raters namespaced by the file or folder named here (never real accounts unless "
        "--map-rater says so), and new traces are assigned to the project's annotators. Exit code 2 and a message naming the file, record and "
        "field when a file is malformed; the database is then unchanged. A Hugging Face dataset (a folder "
        "or hf://owner/name) is read as one source, with --columns, --split and --config; a dataset "
        "published by export_dataset comes back with its labels."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="+",
            help="Trace files, or folders (their .json, .jsonl, .ndjson, .traj and .eval files, recursively); a dataset folder "
            "(parquet, arrow, save_to_disk, a card with configs) or hf://owner/name is one source",
        )
        parser.add_argument("--batch", required=True, help="Batch name (created if missing, else extended)")
        parser.add_argument("--project", help="Project slug to add the batch to")
        parser.add_argument(
            "--format", choices=list(importers.ALL_FORMATS), help="Force a format (default: detect)"
        )
        parser.add_argument(
            "--columns",
            help="hf_dataset column mapping, e.g. id=trace_id,steps=messages (fields: "
            + ", ".join(hf_dataset.FIELDS)
            + ")",
        )
        parser.add_argument("--split", help="Dataset split to read (default: train, else the first)")
        parser.add_argument("--config", help="Dataset config (subset) to read")
        parser.add_argument(
            "--ignore-unknown-modes",
            action="store_true",
            help="Skip embedded labels whose mode is not in the project's taxonomy (listed in the summary)",
        )
        parser.add_argument(
            "--map-rater",
            action="append",
            default=[],
            metavar="NAME=USERNAME",
            help="Attribute the labels of rater NAME in the files to the existing account USERNAME (who joins "
            "the project as an annotator). Without it, every rater in the files becomes an inactive imported "
            "rater namespaced by its source (e.g. MAD_human_labelled_dataset/annotator_1), never a real "
            "account. Repeat for several raters.",
        )

    def handle(self, *args, paths, batch, project, format, ignore_unknown_modes, map_rater, **options):
        # What is typed here is stored (the batch name) or looked up: refused before anything is read.
        problem = storable.option_problem(
            {"--batch": batch, "--project": project, "--map-rater": map_rater}
            | {f"--{k}": options.get(k) for k in ("columns", "split", "config")}
        )
        if problem:
            raise CommandError(f"Nothing imported: {problem}", returncode=2)
        expanded = list(_expand_with_tops(paths, format))
        files = [item for _, item in expanded]
        # Raters are namespaced by the source named on the command line: a folder's files share its name.
        sources = {name: rater_source(top) for top, (_, name) in expanded}
        try:
            rater_map = parse_rater_map(map_rater)
        except LabelImportError as error:
            raise CommandError(str(error), returncode=2) from None
        source_options = {k: options[k] for k in ("columns", "split", "config") if options.get(k)}
        if source_options and format not in (None, *importers.SOURCE_FORMATS):
            raise CommandError(
                f"--columns, --split and --config apply to {', '.join(importers.SOURCE_FORMATS)}",
                returncode=2,
            )
        if "columns" in source_options:
            try:
                source_options["columns"] = hf_dataset.parse_columns(source_options["columns"])
            except importers.TraceFormatError as error:
                raise CommandError(str(error), returncode=2) from None
        target = None
        if project:
            target = Project.objects.select_related("taxonomy_version").filter(slug=project).first()
            if target is None:
                raise CommandError(f"No project {project!r}", returncode=2)
        progress = _Progress(sum(importers.file_size(path) or 0 for path, _ in files), self.stderr)
        try:
            result, labels = do_import_traces(
                files,
                batch_name=batch,
                fmt=format,
                project=target,
                ignore_unknown_modes=ignore_unknown_modes,
                progress=progress,
                source_options=source_options,
                sources=sources,
                rater_map=rater_map,
            )
        except ImportFailed as failure:
            progress.done()
            lines = [f"  {error}" for error in failure.result.errors]
            raise CommandError(
                "Import failed; nothing was imported:\n" + "\n".join(lines), returncode=2
            ) from None
        progress.done()
        for item in result.files:
            self.stdout.write(
                f"{item.name}: {item.format}, {item.traces} traces, {item.steps} steps added"
                + (f", {item.duplicates} already imported" if item.duplicates else "")
            )
        if result.traces:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Batch {result.batch.name}: {result.traces} traces and {result.steps} steps added"
                    + (f", {result.duplicates} duplicates skipped" if result.duplicates else "")
                )
            )
        elif result.duplicates:
            self.stdout.write(
                f"Nothing new: every trace in these files was already imported, {result.duplicates} duplicates skipped;"
                + (
                    " no batch was created."
                    if result.batch is None
                    else f" batch {result.batch.name} unchanged."
                )
            )
        else:
            self.stdout.write("Nothing imported: the files hold no traces; no batch was created.")
        if result.added_to_project:
            self.stdout.write(
                f"{result.added_to_project} traces already imported were added to the project {target.slug} "
                "(only these files' traces, not the rest of their batches)"
            )
        if labels is not None:
            self.stdout.write(
                f"Labels: {labels.created} annotations imported, {labels.unchanged} unchanged"
                + (
                    f", new imported raters (inactive, never given work): {', '.join(labels.users_created)}"
                    if labels.users_created
                    else ""
                )
            )
            report_label_details(self, labels)


def _expand_with_tops(paths: list[str], fmt: str | None):
    """(the argument it came from, (path, display name)) for every file or source of `paths`: files as they
    are, a dataset folder or hf:// repo as one source, other folders file by file."""
    for top in paths:
        for item in _expand_one(top, fmt):
            yield top, item


def _expand_one(text: str, fmt: str | None):
    path = Path(text)
    if fmt in importers.SOURCE_FORMATS and not path.exists() and _REPO_ID.match(text):
        text = HF_PREFIX + text  # `--format hf_dataset owner/name`: a Hub repo id
    if text.startswith(HF_PREFIX):
        yield text, text
    elif path.is_dir() and (fmt in importers.SOURCE_FORMATS or importers.detect_source(path)):
        yield path, str(path)
    else:
        for child in expand_paths([path], TRACE_SUFFIXES):
            yield child, str(child)


_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


class _Progress:
    """A one-line progress meter on stderr when it is a terminal (quiet in logs and CI)."""

    def __init__(self, total: int, stream):
        self.total, self.stream = max(total, 1), stream
        self.active = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
        self._last = -1

    def __call__(self, bytes_done: int, records: int) -> None:
        percent = min(100, int(100 * bytes_done / self.total))
        if self.active and percent != self._last:
            self._last = percent
            self.stream.write(f"\r{percent:3d}%  {records} records", ending="")
            self.stream.flush()

    def done(self) -> None:
        if self.active and self._last >= 0:
            self.stream.write("")
