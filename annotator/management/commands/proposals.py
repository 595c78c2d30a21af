"""`manage.py proposals SLUG list|accept|decline`: proposed failure modes from the command line, grouped as
on the proposals page and the API."""

from __future__ import annotations

from json import dumps

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.services.proposals import (
    STATUSES,
    ProposalError,
    do_settle,
    groups_json,
    project_proposals,
    proposal_groups,
)


class Command(BaseCommand):
    help = (
        "Proposed failure modes: failures the taxonomy lacks, recorded by annotators while labelling. "
        "'list' prints the project's proposals grouped by the words they use (the same groups as the "
        "proposals page and GET /api/projects/SLUG/proposals/), each group with its frequent words, suggested "
        "names, co-occurring modes and proposals; --status open (default), accepted, declined or all; --json "
        "prints the API's body. 'accept ID... --mode CODE' settles proposals as turned into the mode CODE (a "
        "taxonomy migration adding CODE links them to it); 'decline ID... --reason TEXT' declines them. The "
        "command acts as staff: it sees every proposal. Exit code 2 with a message when a request cannot be "
        "done (nothing is changed then)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="The project's proposals, grouped")
        listing.add_argument(
            "--status", default="open", choices=STATUSES, help="Which proposals to group (default: open)"
        )
        listing.add_argument("--json", action="store_true", help="Print the API's JSON body instead of text")
        accept = sub.add_parser("accept", help="Settle proposals as turned into a mode")
        accept.add_argument("ids", nargs="+", type=int, metavar="ID", help="Proposal ids (as 'list' prints)")
        accept.add_argument("--mode", required=True, help="The new mode's code, e.g. FM-2.7")
        decline = sub.add_parser("decline", help="Decline proposals, saying why")
        decline.add_argument("ids", nargs="+", type=int, metavar="ID", help="Proposal ids (as 'list' prints)")
        decline.add_argument("--reason", required=True, help="Why, in words the annotators will read")

    def handle(self, *args, slug: str, action: str, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        try:
            getattr(self, f"_{action}")(project, **options)
        except ProposalError as error:
            raise CommandError(str(error), returncode=2) from None

    def _list(self, project: Project, *, status: str, json: bool = False, **options) -> None:
        groups = proposal_groups(project_proposals(project), status)
        if json:
            self.stdout.write(dumps(groups_json(groups, status), indent=2, ensure_ascii=False))
            return
        if not groups:
            self.stdout.write(f"No {'' if status == 'all' else status + ' '}proposals.")
            return
        for number, (group, items) in enumerate(groups, start=1):
            terms = f": {', '.join(group.terms)}" if group.terms else ""
            self.stdout.write(f"Group {number}, {len(items)} proposal{'s' if len(items) != 1 else ''}{terms}")
            if group.names:
                self.stdout.write(f"  suggested names: {' · '.join(group.names)}")
            if group.cooccurring:
                modes = ", ".join(f"{code} x{n}" for code, n in group.cooccurring)
                self.stdout.write(f"  co-occurs with: {modes}")
            for p in items:
                steps = f" (steps {', '.join(map(str, p.steps))})" if p.steps else ""
                settled = f" -> {p.outcome}" if p.outcome else ""
                self.stdout.write(
                    f"  #{p.pk}\t{p.status}{settled}\t{p.author.get_username()} on trace "
                    f"{p.trace.external_id}{steps}: {p.text}"
                )

    def _accept(self, project: Project, *, ids: list[int], mode: str, **options) -> None:
        settled = do_settle(project, ids, status="accepted", outcome=mode)
        self.stdout.write(f"{_count(settled)} turned into {mode.strip()}")

    def _decline(self, project: Project, *, ids: list[int], reason: str, **options) -> None:
        settled = do_settle(project, ids, status="declined", outcome=reason)
        self.stdout.write(f"{_count(settled)} declined")


def _count(items: list) -> str:
    return f"{len(items)} proposal{'s' if len(items) != 1 else ''}"
