"""What discover_modes and gate_modes share: running in this process with progress, and printing."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.discovery.api import run_body
from annotator.discovery.process import do_process_discovery
from annotator.models import DiscoveryRun, Project


def project_of(slug: str) -> Project:
    project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
    if project is None:
        raise CommandError(f"No project {slug!r}", returncode=2)
    return project


def add_common(parser) -> None:
    parser.add_argument(
        "--raters",
        required=True,
        help="The gate's rater models, comma-separated (3 to 8): m1,m2,m3; MODEL@vN asks MODEL with prompt version N",
    )
    parser.add_argument(
        "--kappa-min", type=float, default=0.75, help="A candidate passes at Fleiss' kappa >= this"
    )
    parser.add_argument(
        "--coverage-min",
        type=float,
        default=0.70,
        help="The codebook passes when this share of failed traces is coded",
    )
    parser.add_argument("--json", action="store_true", help="Print the run as the API answers it")


def run_and_report(command: BaseCommand, run: DiscoveryRun, *, as_json: bool) -> None:
    """Process the run here (its answers are kept: a run stopped by Ctrl-C resumes from the API or page),
    then print its results."""
    run = do_process_discovery(run.pk)
    body = run_body(run)
    if as_json:
        command.stdout.write(json.dumps(body, indent=2, default=str))
    else:
        command.stdout.write(f"Run {run.pk}: {run.status_label}{' ' + run.error if run.error else ''}")
        for c in body["candidates"]:
            kappa = "undefined" if c["kappa"] is None else f"{c['kappa']:.3f}"
            ci = f" [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]" if c["interval"] else ""
            verdict = "passes" if c["passes"] else "fails"
            command.stdout.write(
                f"  {c['code']:<16} kappa {kappa}{ci}  prevalence {c['prevalence']}  {verdict}  {c['name']}"
            )
        for d in body["dropped"]:
            command.stdout.write(f"  dropped {d['code']}: {d['reason']}")
        if body["coverage"] is not None:
            command.stdout.write(f"Coverage {body['coverage']:.3f} (passes: {body['codebook_passes']})")
    if run.status != DiscoveryRun.Status.SUCCEEDED:
        raise CommandError(f"Run {run.pk} ended {run.status_label}", returncode=1)
