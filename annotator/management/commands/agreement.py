"""`manage.py agreement SLUG`: compute the agreement report now, through the same service as the page."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.models.reports import JobStatus
from annotator.services.reports import ReportFilterError, clean_filters, do_compute_report, do_request_report


def fmt(estimate: dict[str, Any] | None, digits: int = 3) -> str:
    if not estimate:
        return "-"
    if estimate.get("value") is None:
        return f"undef:{estimate.get('undefined_code')}"
    return f"{estimate['value']:.{digits}f}"


def fmt_ci(interval: dict[str, Any]) -> str:
    if interval.get("low") is None:
        return ""
    return f"[{interval['low']:.2f}, {interval['high']:.2f}]"


def _table(rows: list[list[str]], headers: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()  # noqa: E731
    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def render_text(results: dict[str, Any]) -> str:
    """The report as readable plain-text tables (what the command prints without --json)."""
    counts = results["counts"]
    raters = [r["username"] for r in results["raters"]]
    out = [
        f"Agreement report for {results['project']} ({results['taxonomy']['slug']} v{results['taxonomy']['version']}, "
        f"{results['taxonomy']['labelling_mode']}); filters: {results['filters'] or 'none'}",
        f"{counts['items']} traces ({counts['items_with_two_or_more_raters']} with 2+ raters), "
        f"{counts['annotations']} annotations by {counts['raters']} raters: {', '.join(raters) or '-'}",
        f"headline kappa: {results['kappa_statistic']}; {results['settings']['n_boot']} bootstrap resamples, "
        f"{int(results['settings']['ci_level'] * 100)}% intervals",
        "",
    ]
    kappa = results["kappa_statistic"]
    rows = [
        [
            m["code"],
            str(m["n_items"]),
            fmt(m["observed_agreement"]),
            fmt(m[kappa]),
            fmt_ci(m["kappa_ci"]),
            fmt(m["krippendorff_alpha"]),
            fmt_ci(m["alpha_ci"]),
            fmt(m["gwet_ac1"]),
            fmt(m["pabak"]),
            " ".join("-" if v is None else f"{v:.2f}" for v in m["prevalence"].values()),
        ]
        for m in results["modes"]
    ]
    out += _table(rows, ["mode", "n", "obs", kappa, "CI", "alpha", "CI", "AC1", "PABAK", "prevalence"])
    out.append("")
    cat_rows = [
        [c["code"] or "-", c["name"], fmt(c["kappa"]), fmt(c["krippendorff_alpha"]), fmt(c["gwet_ac1"])]
        for c in results["categories"]
    ]
    overall = results["overall"]
    cat_rows.append(
        ["overall", "", fmt(overall["kappa"]), fmt(overall["krippendorff_alpha"]), fmt(overall["gwet_ac1"])]
    )
    out += _table(cat_rows, ["category", "name", "kappa", "alpha", "AC1"])
    mean_pairwise = overall["mean_pairwise_cohen_kappa"]
    out.append(
        f"mean pairwise Cohen's kappa: {fmt(mean_pairwise)} over {mean_pairwise['n_defined']} (pair, mode) "
        f"combinations where defined; mean of per-mode means {fmt({'value': mean_pairwise['mean_of_mode_means']})}"
    )
    out += ["", f"MASI alpha over label sets: {fmt(results['masi_alpha']['alpha'])}"]
    loc = results["localisation"]["overall"]
    within = ", ".join(f"within {w}: {fmt(v)}" for w, v in loc["within"].items())
    out.append(f"localisation ({loc['n_pairs']} pairs with steps): exact {fmt(loc['exact'])}, {within}")
    for pair in results["pairs"]:
        out.append(
            f"pair {pair['a']} / {pair['b']}: {pair['n_shared_items']} shared traces, "
            f"mean kappa {fmt(pair['kappa_macro'])}"
        )
    if results["primary"]:
        p = results["primary"]
        out.append(
            f"primary label: kappa {fmt(p['cohen_kappa'])}, alpha {fmt(p['krippendorff_alpha'])} on {p['n_items']} traces"
        )
    out += ["", "Methods: " + results["methods"]["text"]]
    return "\n".join(out)


class Command(BaseCommand):
    help = (
        "Compute a project's inter-annotator agreement report now (synchronously, through the same service "
        "as the report page and the API) and print it: readable tables, or the stored JSON with --json."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument(
            "--json", action="store_true", help="Print the report JSON (schema in docs/agreement.md)"
        )
        parser.add_argument("--batch", help="Only traces of this batch")
        parser.add_argument("--annotators", help="Only these annotators (comma-separated usernames)")
        parser.add_argument("--since", help="Submitted on or after this date (YYYY-MM-DD)")
        parser.add_argument("--until", help="Submitted on or before this date (YYYY-MM-DD)")
        parser.add_argument(
            "--where",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="Only traces whose metadata KEY equals VALUE (as text), e.g. --where 'round=Round 3'; "
            "repeat to require several",
        )
        parser.add_argument(
            "--view",
            help="Only the traces of this saved view (name or id; manage.py traces --save-view). "
            "--where KEY=VALUE selects what a view of --meta KEY:VALUE selects",
        )
        parser.add_argument(
            "--methods",
            action="store_true",
            help="Print only the methods paragraph, ready to paste into a paper",
        )

    def handle(self, *args, slug: str, json: bool, methods: bool, **options):
        project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        try:
            filters = clean_filters(
                project,
                {k: options.get(k) for k in ("batch", "annotators", "since", "until", "where", "view")},
            )
        except ReportFilterError as error:
            raise CommandError("; ".join(error.messages), returncode=2) from None
        report = do_request_report(project, filters, enqueue=False)
        if report.status != JobStatus.SUCCEEDED:
            report = do_compute_report(report.pk)
        if report.status != JobStatus.SUCCEEDED:
            raise CommandError(f"The report failed: {report.error}", returncode=1)
        if methods:
            self.stdout.write(report.results["methods"]["text"])
        elif json:
            self.stdout.write(_dumps(report.results))
        else:
            self.stdout.write(render_text(report.results))


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
