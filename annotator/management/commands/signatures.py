"""python manage.py signatures SLUG: the failure signatures of a project, as text, JSON or one figure's CSV."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.api.signature_serializers import SignatureReportSerializer
from annotator.csvsafe import csv_writer
from annotator.models import Project
from annotator.search.scope import operator_access
from annotator.services.signatures import SignatureQueryError, parse_signature_query
from annotator.services.signatures.report import build_report, with_view
from annotator.signatures.tables import FIGURES, figure_table
from annotator.signatures.text import render_text


class Command(BaseCommand):
    help = (
        "Failure signatures of a project: mode prevalence per model/system/benchmark, modes per trace, benign "
        "versus fatal modes, co-occurrence and failure vectors, where in the trace failures show, and an "
        "optional before/after comparison of two batches. Computed from gold labels unless --source says "
        "otherwise. The same numbers as the page and GET /api/projects/SLUG/signatures/."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument(
            "--source",
            default="gold",
            help="gold (default), union, agreed, annotator:NAME, or gold+union / gold+agreed / gold+annotator:NAME",
        )
        for name in ("batch", "model", "system", "benchmark"):
            parser.add_argument(
                f"--{name}", action="append", default=[], help=f"Only this {name} (repeatable)"
            )
        parser.add_argument("--view", default="", help="Only the traces of this saved view (name or id)")
        parser.add_argument("--compare", nargs=2, metavar=("BATCH_A", "BATCH_B"), help="Compare two batches")
        output = parser.add_mutually_exclusive_group()
        output.add_argument(
            "--json", dest="as_json", action="store_true", help="The API's JSON instead of text tables"
        )
        output.add_argument(
            "--csv", dest="csv_figure", choices=sorted(FIGURES), help="One figure's table as CSV"
        )

    def handle(
        self,
        *args,
        slug,
        source,
        batch,
        model,
        system,
        benchmark,
        compare,
        as_json,
        csv_figure,
        view,
        **options,
    ):
        project = Project.objects.filter(slug=slug).select_related("taxonomy_version").first()
        if project is None:
            raise CommandError(f"No project with slug {slug!r}")
        params = {"source": source, "batch": batch, "model": model, "system": system, "benchmark": benchmark}
        if compare:
            params |= {"compare_a": compare[0], "compare_b": compare[1]}
        try:
            query = parse_signature_query(params)
        except SignatureQueryError as error:
            raise CommandError(str(error)) from error
        query, problem = with_view(project, operator_access(project), query, view)
        if problem:
            raise CommandError(f"--view: {problem}")
        report = build_report(project, query, keep_empty=bool(csv_figure))
        if as_json:
            self.stdout.write(json.dumps(SignatureReportSerializer(report).data, indent=2))
        elif csv_figure:
            header, rows = figure_table(report.signatures, csv_figure)
            writer = csv_writer(self.stdout, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(["" if value is None else value for value in row] for row in rows)
        elif report.signatures is None:
            self.stderr.write(report.empty_message)
        else:
            self.stdout.write(render_text(report.signatures, report.source), ending="")
