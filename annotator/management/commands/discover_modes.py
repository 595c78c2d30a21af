"""python manage.py discover_modes SLUG --scope batch:NAME|outcome:failure|view:NAME --raters m1,m2,m3
[--sample N] [--gate-sample N] [--model M] [--dry-run] [--json]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.discovery.cli import add_common, project_of, run_and_report
from annotator.discovery.estimate import estimate_discovery
from annotator.discovery.service import (
    DEFAULT_GATE_SAMPLE,
    DEFAULT_SAMPLE,
    DiscoveryError,
    do_start_discovery,
)
from annotator.search.scope import operator_access


class Command(BaseCommand):
    help = (
        "Discover failure modes the project's taxonomy lacks: the model analyses a random sample of the scope's "
        "traces (what went wrong, where, verbatim quotes, which current modes cover it), the uncovered analyses "
        "are grouped (TF-IDF), each group is named as a candidate, candidates whose quotes are not in their steps "
        "or that restate a current mode are dropped, and the rest are gated on held-out traces by the --raters "
        "(Fleiss' kappa with an interval, coverage). Runs in this process; the answers are never labels."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument(
            "--scope", required=True, help="batch:NAME, outcome:failure|success|unknown or view:NAME"
        )
        parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="Traces induction reads")
        parser.add_argument(
            "--gate-sample", type=int, default=DEFAULT_GATE_SAMPLE, help="Held-out traces the gate reads"
        )
        parser.add_argument("--model", help="The model that analyses and names (default: the LLM settings')")
        parser.add_argument(
            "--dry-run", action="store_true", help="Print the estimate (requests, tokens, cost); call nothing"
        )
        add_common(parser)

    def handle(
        self, *args, slug: str, scope: str, sample: int, gate_sample: int, model, dry_run: bool, **options
    ):
        access = operator_access(project_of(slug))
        common = {
            "scope": scope,
            "raters": options["raters"],
            "sample": sample,
            "gate_sample": gate_sample,
            "kappa_min": options["kappa_min"],
            "coverage_min": options["coverage_min"],
            "model": model,
        }
        try:
            if dry_run:
                found = estimate_discovery(access, **common).as_dict()
                if options["json"]:
                    self.stdout.write(json.dumps(found, indent=2))
                else:
                    for key, value in found.items():
                        self.stdout.write(f"{key}: {value}")
                return
            run = do_start_discovery(access, enqueue=False, **common)
        except DiscoveryError as error:
            raise CommandError(str(error), returncode=2) from None
        run_and_report(self, run, as_json=options["json"])
