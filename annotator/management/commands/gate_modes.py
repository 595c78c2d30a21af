"""python manage.py gate_modes SLUG changes.yaml --raters m1,m2,m3 --scope batch:NAME [--sample N] [--json]
python manage.py gate_modes SLUG --proposals --raters m1,m2,m3 --scope outcome:failure"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.discovery.cli import add_common, project_of, run_and_report
from annotator.discovery.service import (
    DEFAULT_GATE_SAMPLE,
    DiscoveryError,
    candidates_from_changes,
    candidates_from_proposals,
    do_start_gate,
)
from annotator.search.scope import operator_access
from annotator.services.evolution import MigrationError, parse_changes_text


class Command(BaseCommand):
    help = (
        "Gate candidate failure modes before anyone adopts them: K >= 3 model raters (--raters, each request "
        "carrying its rater's model name) apply the current modes plus the candidates (the 'op: add' entries of "
        "a taxonomy-migration changes file, or --proposals: the groups of open proposals) to a sample of the "
        "scope, with the LLM rater's prompt. Per candidate: Fleiss' kappa with its 95% interval, prevalence and "
        "the traces the raters split on; a candidate passes at --kappa-min, the codebook at --coverage-min."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument(
            "changes",
            nargs="?",
            help="YAML or JSON list of 'op: add' entries (code, name, definition, guidance)",
        )
        parser.add_argument(
            "--proposals", action="store_true", help="Gate the groups of open proposals instead"
        )
        parser.add_argument(
            "--scope", default="outcome:failure", help="batch:NAME, outcome:failure (default) or view:NAME"
        )
        parser.add_argument(
            "--sample", type=int, default=DEFAULT_GATE_SAMPLE, help="Traces the raters read (all when fewer)"
        )
        add_common(parser)

    def handle(self, *args, slug: str, changes, proposals: bool, scope: str, sample: int, **options):
        project = project_of(slug)
        if bool(changes) == bool(proposals):
            raise CommandError("Give a changes file or --proposals (one of them)", returncode=2)
        try:
            if proposals:
                candidates = candidates_from_proposals(project)
            else:
                path = Path(changes)
                if not path.is_file():
                    raise CommandError(f"No file {changes!r}", returncode=2)
                candidates = candidates_from_changes(parse_changes_text(path.read_text(encoding="utf-8")))
            run = do_start_gate(
                operator_access(project),
                candidates=candidates,
                scope=scope,
                raters=options["raters"],
                sample=sample,
                kappa_min=options["kappa_min"],
                coverage_min=options["coverage_min"],
                enqueue=False,
            )
        except (DiscoveryError, MigrationError) as error:
            raise CommandError(str(error), returncode=2) from None
        run_and_report(self, run, as_json=options["json"])
