"""`manage.py rounds SLUG list|open|close|trend`: calibration rounds from the command line."""

from __future__ import annotations

from json import dumps

from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from annotator.access import ProjectAccess
from annotator.models import Project, Role
from annotator.search.saved import do_open_view_round, find_view
from annotator.services.rounds import (
    RoundError,
    TraceChoice,
    do_close_round,
    do_open_round,
    round_progress,
    round_trend,
    trend_json,
)


class Command(BaseCommand):
    help = (
        "Calibration rounds: a named set of traces that every chosen annotator labels (full overlap, blind); "
        "closing a round computes its agreement report and keeps it; the trend compares closed rounds mode by "
        "mode. Subcommands: list; open NAME --annotators a,b [--traces 1,2 | --batch B] [--where k=v | --view NAME] "
        "[--sample N --seed S]; close NAME; trend [--json]. Exit code 2 with a message when a request cannot "
        "be done (nothing is changed then)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="Every round with its status and progress")
        opening = sub.add_parser("open", help="Open a round")
        opening.add_argument("name", help="Round name, unique in the project (e.g. 'Round 1')")
        opening.add_argument("--annotators", required=True, help="Comma-separated usernames (at least two)")
        opening.add_argument("--traces", help="Comma-separated trace ids to take")
        opening.add_argument("--batch", default="", help="Take traces of this batch only")
        opening.add_argument(
            "--where",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="Traces whose metadata KEY equals VALUE",
        )
        opening.add_argument(
            "--view",
            default="",
            help="Take the traces of this saved view (its name or id; see manage.py traces --save-view)",
        )
        opening.add_argument("--sample", type=int, help="A seeded random sample of this many matching traces")
        opening.add_argument("--seed", type=int, default=0, help="Seed of the sample (default 0)")
        closing = sub.add_parser("close", help="Close a round and compute its agreement report")
        closing.add_argument("name", help="Round name")
        trend = sub.add_parser("trend", help="Agreement per mode and overall across closed rounds")
        trend.add_argument("--json", action="store_true", help="Print JSON instead of a table")

    def handle(self, *args, slug: str, action: str, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        try:
            getattr(self, f"_{action}")(project, **options)
        except RoundError as error:
            raise CommandError(str(error), returncode=2) from None

    def _list(self, project: Project, **options) -> None:
        rounds = list(project.rounds.prefetch_related("annotators"))
        if not rounds:
            self.stdout.write("No rounds yet.")
            return
        progress = round_progress(rounds)
        for round_ in rounds:
            done, total = progress.get(round_.pk, (0, 0))
            annotators = ", ".join(u.username for u in round_.annotators.all())
            self.stdout.write(f"{round_.name}\t{round_.status}\t{done} of {total} submitted\t{annotators}")

    def _open(
        self, project: Project, *, name, annotators, traces, batch, where, sample, seed, view, **options
    ) -> None:
        if view:
            if traces or batch or where:
                raise CommandError("--view takes the view's traces: give no --traces, --batch or --where")
            self._open_view(project, name=name, annotators=annotators, ref=view, sample=sample, seed=seed)
            return
        ids = ()
        if traces:
            try:
                ids = tuple(int(t) for t in traces.split(",") if t.strip())
            except ValueError:
                raise CommandError("--traces takes comma-separated trace ids", returncode=2) from None
        choice = TraceChoice(ids=ids, batch=batch, sample=sample, seed=seed, where=tuple(where))
        round_ = do_open_round(project, name=name, annotators=annotators.split(","), choice=choice)
        self.stdout.write(
            f"Round {round_.name!r} opened: {round_.traces.count()} traces for {round_.annotators.count()} annotators"
        )

    def _open_view(self, project: Project, *, name, annotators, ref, sample, seed) -> None:
        # The operator who runs manage.py reads the whole database: an owner who labels nothing.
        access = ProjectAccess(user=None, project=project, roles=frozenset({Role.OWNER}))
        try:
            saved = find_view(access, ref)
        except Http404:
            raise CommandError(f"--view: no saved view {ref!r} in {project.slug}", returncode=2) from None
        round_ = do_open_view_round(
            access, saved, name=name, annotators=annotators.split(","), sample=sample, seed=seed
        )
        self.stdout.write(
            f"Round {round_.name!r} opened on the view {saved.name!r}: {round_.traces.count()} traces for "
            f"{round_.annotators.count()} annotators"
        )

    def _close(self, project: Project, *, name, **options) -> None:
        round_ = project.rounds.filter(name=name).first()
        if round_ is None:
            raise CommandError(f"No round {name!r} in {project.slug}", returncode=2)
        round_ = do_close_round(round_)
        self.stdout.write(f"Round {round_.name!r} closed; report {round_.report_id} ({round_.report.status})")

    def _trend(self, project: Project, *, json: bool = False, **options) -> None:
        trend = round_trend(project)
        names = [r.name for r in trend.rounds]

        def value(estimate):
            return None if not estimate else estimate.get("value")

        if json:
            data = trend_json(trend)
            self.stdout.write(dumps(data, indent=2))
            return
        if not names:
            self.stdout.write("No closed round with a computed report yet.")
            return
        self.stdout.write("\t".join(["", *names]))
        for label, values in trend.overall:
            self.stdout.write("\t".join([label, *(_fmt(value(e)) for e in values)]))
        for code, _, rows in trend.modes:
            cells = [_fmt(None if row is None else value(row[row["kappa_ci"]["statistic"]])) for row in rows]
            self.stdout.write("\t".join([code, *cells]))


def _fmt(number: float | None) -> str:
    return "-" if number is None else f"{number:.3f}"
