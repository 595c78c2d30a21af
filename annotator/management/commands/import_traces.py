import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.services.imports import do_import_traces
from traces import importers
from traces.services import ImportFailed


class Command(BaseCommand):
    help = (
        "Import agent traces from one or more files into a batch, all or nothing. The format is detected "
        "per file (or forced with --format); traces already imported (same content) are skipped. With "
        "--project the batch joins that project, labels shipped inside the files (MAST human labels, "
        "Who&When attributions, native 'annotations') become imported annotations, and new traces are "
        "assigned to the project's annotators. Exit code 2 and a message naming the file, record and "
        "field when a file is malformed; the database is then unchanged."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="+",
            type=Path,
            help="Trace files, or folders (their .json, .jsonl, .traj and .eval files)",
        )
        parser.add_argument("--batch", required=True, help="Batch name (created if missing, else extended)")
        parser.add_argument("--project", help="Project slug to add the batch to")
        parser.add_argument(
            "--format", choices=list(importers.FORMATS), help="Force a format (default: detect)"
        )
        parser.add_argument(
            "--ignore-unknown-modes",
            action="store_true",
            help="Skip embedded labels whose mode is not in the project's taxonomy (listed in the summary)",
        )

    def handle(self, *args, paths, batch, project, format, ignore_unknown_modes, **options):
        files = list(_expand(paths))
        target = None
        if project:
            target = Project.objects.select_related("taxonomy_version").filter(slug=project).first()
            if target is None:
                raise CommandError(f"No project {project!r}", returncode=2)
        progress = _Progress(sum(path.stat().st_size for path, _ in files), self.stderr)
        try:
            result, labels = do_import_traces(
                files,
                batch_name=batch,
                fmt=format,
                project=target,
                ignore_unknown_modes=ignore_unknown_modes,
                progress=progress,
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
        self.stdout.write(
            self.style.SUCCESS(
                f"Batch {result.batch.name}: {result.traces} traces and {result.steps} steps added"
                + (f", {result.duplicates} duplicates skipped" if result.duplicates else "")
            )
        )
        if result.traces == 0 and result.duplicates:
            self.stdout.write("Nothing new: every trace in these files was already imported.")
        if labels is not None:
            self.stdout.write(
                f"Labels: {labels.created} annotations imported, {labels.unchanged} unchanged"
                + (
                    f", new imported annotators: {', '.join(labels.users_created)}"
                    if labels.users_created
                    else ""
                )
            )
            for mode, count in labels.ignored_modes.most_common():
                self.stdout.write(f"  ignored {count} labels of unknown mode {mode!r}")


# Inside a folder only these are taken (a README or PROVENANCE.md beside the traces is not a trace file);
# files named explicitly are always tried.
TRACE_SUFFIXES = {".json", ".jsonl", ".ndjson", ".traj", ".eval"}


def _expand(paths: list[Path]):
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
                if child.suffix.lower() in TRACE_SUFFIXES:
                    yield child, str(child)
        elif path.exists():
            yield path, str(path)
        else:
            raise CommandError(f"{path}: no such file", returncode=2)


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
