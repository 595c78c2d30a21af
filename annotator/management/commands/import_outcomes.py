from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.outcomes.parse import MAX_BYTES, OutcomeFileError
from annotator.outcomes.service import do_import_outcomes


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
            "file", type=Path, help=f"The results file (.json, .jsonl, .csv; at most {MAX_BYTES:,} bytes)"
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

    def handle(self, *args, slug: str, file: Path, dry_run: bool, ignore_unknown: bool, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        try:
            if file.stat().st_size > MAX_BYTES:
                raise CommandError(
                    f"Nothing changed: {file.name} is larger than {MAX_BYTES:,} bytes", returncode=1
                )
            data = file.read_bytes()
        except OSError as error:
            raise CommandError(f"Cannot read {file.name}: {error.strerror}", returncode=2) from None
        try:
            result = do_import_outcomes(
                project, data, filename=file.name, dry_run=dry_run, ignore_unknown=ignore_unknown
            )
        except OutcomeFileError as error:
            lines = "\n".join(f"  {problem}" for problem in error.problems[:50])
            more = len(error.problems) - 50
            tail = f"\n  and {more} more" if more > 0 else ""
            raise CommandError(
                f"Nothing changed: {file.name} has {len(error.problems)} problem(s):\n{lines}{tail}"
            ) from None
        prefix = "Dry run, nothing changed: " if dry_run else ""
        self.stdout.write(prefix + result.summary())
