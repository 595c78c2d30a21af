import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.management.paths import expand_paths
from annotator.models import Project
from annotator.outcomes.parse import MAX_BYTES, OutcomeFileError
from annotator.outcomes.service import do_import_outcomes

# Inside a folder only these are read (a README beside the reports is not one).
OUTCOME_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".csv"})


class Command(BaseCommand):
    requires_system_checks = []  # no view or URL module is needed: start fast

    help = (
        "Set the outcome (success, failure, unknown), score and metadata of a project's traces from a "
        "results file keyed by external id, all or nothing: SWE-bench's run report (resolved_ids -> success; "
        "unresolved_ids, empty_patch_ids, error_ids -> failure), SWE-bench's per-instance report.json "
        '({instance_id: {"resolved": bool}}), or a CSV/JSONL of external_id, outcome, score and any other '
        "columns (they go to the trace's metadata). A file that names a trace the project does not hold, "
        "or has a bad outcome or score, changes nothing and names every bad record."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The project's slug")
        parser.add_argument(
            "file",
            type=Path,
            nargs="+",
            help=f"Results files (.json, .jsonl, .csv; at most {MAX_BYTES:,} bytes in all) or folders of them "
            "(walked recursively, e.g. a SWE-bench run's logs with one report.json per instance), read as one "
            "file: all or nothing",
        )
        parser.add_argument(
            "--ignore-unknown",
            action="store_true",
            help="Skip ids this project does not hold (e.g. a SWE-bench report of a whole run when the project "
            "holds part of it) instead of refusing the file; how many were skipped is printed",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Check the file and say what would change; change nothing"
        )

    def handle(
        self, *args, slug: str, file: list[Path], dry_run: bool, ignore_unknown: bool, **options
    ) -> None:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        paths = list(expand_paths(file, OUTCOME_SUFFIXES))
        files: list[tuple[str, bytes]] = []
        total = 0
        for path in paths:
            try:
                total += path.stat().st_size
                if total > MAX_BYTES:
                    raise CommandError(
                        f"Nothing changed: the files hold more than {MAX_BYTES:,} bytes", returncode=1
                    )
                # Named by the path under the folder given, so report.json files of instances stay apart.
                files.append((_name(path, paths), path.read_bytes()))
            except OSError as error:
                raise CommandError(f"Cannot read {path.name}: {error.strerror}", returncode=2) from None
        named = f"{files[0][0]} has" if len(files) == 1 else f"{len(files)} files have"
        try:
            result = do_import_outcomes(project, files=files, dry_run=dry_run, ignore_unknown=ignore_unknown)
        except OutcomeFileError as error:
            lines = "\n".join(f"  {problem}" for problem in error.problems[:50])
            more = len(error.problems) - 50
            tail = f"\n  and {more} more" if more > 0 else ""
            raise CommandError(
                f"Nothing changed: {named} {len(error.problems)} problem(s):\n{lines}{tail}"
            ) from None
        prefix = "Dry run, nothing changed: " if dry_run else ""
        self.stdout.write(prefix + result.summary())


def _name(path: Path, paths: list[Path]) -> str:
    if len(paths) == 1:
        return path.name
    common = Path(os.path.commonpath([p.parent for p in paths]))
    return path.relative_to(common).as_posix()
