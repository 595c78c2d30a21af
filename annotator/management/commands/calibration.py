"""`manage.py calibration SLUG`: gold calibration of annotators from the command line (settings, items,
scores)."""

from __future__ import annotations

from json import dumps

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.agreement.calibration import KAPPA_SE_FORMULA, PROPORTION_INTERVAL
from annotator.models import Project
from annotator.services.calibration import (
    CalibrationError,
    annotator_scores,
    do_add_items,
    do_configure,
    do_remove_items,
    scores_json,
    settings_json,
)


def _ids(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(part) for part in text.replace(" ", ",").split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"Expected comma-separated trace ids, got {text!r}", returncode=2) from None


class Command(BaseCommand):
    help = (
        "Gold calibration of annotators: traces with gold labels served as calibration items (mixed into the "
        "queue at --rate, or as a qualification set of --qualification-size items before real work, with an "
        "optional --min-kappa threshold). Without options it prints, per annotator and mode, sensitivity, "
        "specificity and Cohen's kappa against gold with 95% intervals (Wilson for the proportions; Cohen's "
        "1960 approximate SE for kappa). Settings and item changes are applied first, then the scores are "
        "printed. Exit code 2 with a message when a request cannot be done (nothing is changed then)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument("--annotator", help="Only this annotator's scores (username)")
        parser.add_argument("--json", action="store_true", help="Print settings, items and scores as JSON")
        parser.add_argument(
            "--rate", type=float, help="Mix-in rate: share of claims that are calibration items"
        )
        parser.add_argument(
            "--qualification-size", type=int, help="Calibration items before real work (0: none)"
        )
        threshold = parser.add_mutually_exclusive_group()
        threshold.add_argument(
            "--min-kappa", type=float, help="Pooled kappa against gold required for real work"
        )
        threshold.add_argument(
            "--no-min-kappa", action="store_true", help="Remove the qualification threshold"
        )
        parser.add_argument("--add-items", metavar="IDS", help="Comma-separated gold trace ids to serve")
        parser.add_argument("--add-batch", metavar="BATCH", help="Serve every gold trace of this batch")
        parser.add_argument(
            "--add-all-gold", action="store_true", help="Serve every gold trace of the project"
        )
        parser.add_argument("--remove-items", metavar="IDS", help="Comma-separated trace ids to stop serving")

    def handle(self, *args, slug: str, **options):
        project = Project.objects.select_related("taxonomy_version").filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        try:
            self._change(project, options)
        except CalibrationError as error:
            raise CommandError(str(error), returncode=2) from None
        user_ids = None
        if options["annotator"]:
            user = get_user_model().objects.filter(username=options["annotator"]).first()
            if user is None:
                raise CommandError(f"No user {options['annotator']!r}", returncode=2)
            user_ids = [user.pk]
        scores = annotator_scores(project, user_ids)
        if options["json"]:
            self.stdout.write(dumps({**settings_json(project), "scores": scores_json(scores)}, indent=2))
            return
        self._print(project, scores)

    def _change(self, project: Project, options) -> None:
        if (
            any(options[k] is not None for k in ("rate", "qualification_size", "min_kappa"))
            or options["no_min_kappa"]
        ):
            do_configure(
                project,
                rate=options["rate"],
                qualification_size=options["qualification_size"],
                min_kappa=options["min_kappa"],
                clear_min_kappa=options["no_min_kappa"],
            )
        if options["remove_items"]:
            removed = do_remove_items(project, _ids(options["remove_items"]))
            self.stderr.write(f"{removed} calibration item(s) removed")
        if options["add_items"] or options["add_batch"] or options["add_all_gold"]:
            added = do_add_items(
                project,
                trace_ids=_ids(options["add_items"]),
                batch=options["add_batch"] or "",
                all_gold=options["add_all_gold"],
            )
            self.stderr.write(f"{added} calibration item(s) added")

    def _print(self, project: Project, scores) -> None:
        config = settings_json(project)
        threshold = "none" if config["min_kappa"] is None else f"{config['min_kappa']:.2f}"
        self.stdout.write(
            f"{len(config['items'])} calibration items of {config['gold_traces']} gold traces; rate "
            f"{config['rate']:g}; qualification {config['qualification_size']} items; threshold {threshold}"
        )
        if not scores:
            self.stdout.write("No calibration answers yet.")
            return
        for username, s in scores.items():
            self.stdout.write(
                f"\n{username}: {s.n_items} items; pooled kappa {_est(s.overall.kappa, s.overall.kappa_ci)}"
            )
            self.stdout.write("mode\tTP\tFP\tFN\tTN\tsensitivity\tspecificity\tkappa")
            for m in s.modes:
                c = m.counts
                self.stdout.write(
                    f"{m.mode}\t{c.tp}\t{c.fp}\t{c.fn}\t{c.tn}\t{_est(m.sensitivity, m.sensitivity_ci)}\t"
                    f"{_est(m.specificity, m.specificity_ci)}\t{_est(m.kappa, m.kappa_ci)}"
                )
        self.stdout.write(f"\nIntervals: 95%, {PROPORTION_INTERVAL}; kappa: {KAPPA_SE_FORMULA}")


def _est(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.3f}"
