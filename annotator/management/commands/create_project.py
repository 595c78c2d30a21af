from __future__ import annotations

import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Role
from annotator.services.projects import ProjectSetupError, do_create_project


def _names(value: str | None) -> list[str]:
    return [name.strip() for name in (value or "").split(",") if name.strip()]


class Command(BaseCommand):
    help = (
        "Create a project (or extend an existing one: re-running adds only what is new) with a taxonomy, "
        "batches and members, then assign every trace to --overlap annotators (balanced, rotating pairs). "
        "Unknown users are created without a password and listed; set one with `manage.py changepassword`."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug (used in URLs)")
        parser.add_argument("--taxonomy", required=True, help="Taxonomy slug, e.g. mast or agent-failures-6")
        parser.add_argument("--batch", action="append", default=[], help="Batch name (repeat for several)")
        parser.add_argument("--annotators", help="Comma-separated usernames")
        parser.add_argument("--adjudicators", help="Comma-separated usernames")
        parser.add_argument("--viewers", help="Comma-separated usernames")
        parser.add_argument("--owner", help="Username of the owner")
        parser.add_argument("--overlap", type=int, help="Annotators per trace (default 2 for a new project)")
        parser.add_argument("--name", help="Display name")
        parser.add_argument("--guidelines", type=Path, help="A Markdown file shown to annotators")
        parser.add_argument(
            "--imported-labels-count-toward-overlap",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Whether labels imported with import_annotations fill a trace's --overlap slots (off for a new "
            "project: every trace still goes to --overlap people; on to reproduce a published study). "
            "Switching it on an existing project re-plans the work; submitted and started work stays",
        )

    def handle(self, *args, slug, taxonomy, batch, annotators, adjudicators, viewers, owner, overlap, name,
               guidelines, imported_labels_count_toward_overlap, **options):  # fmt: skip
        members = {
            Role.OWNER: _names(owner),
            Role.ANNOTATOR: _names(annotators),
            Role.ADJUDICATOR: _names(adjudicators),
            Role.VIEWER: _names(viewers),
        }
        text = None
        if guidelines is not None:
            if not guidelines.is_file():
                raise CommandError(f"{guidelines}: no such file")
            text = guidelines.read_text(encoding="utf-8")
        try:
            setup = do_create_project(
                slug,
                taxonomy=taxonomy,
                members={role: names for role, names in members.items() if names},
                batches=batch,
                name=name,
                overlap=overlap,
                guidelines=text,
                imported_labels_count_toward_overlap=imported_labels_count_toward_overlap,
            )
        except ProjectSetupError as error:
            raise CommandError(str(error)) from None
        project = setup.project
        verb = "Created" if setup.created else "Updated"
        self.stdout.write(
            self.style.SUCCESS(
                f"{verb} project {project.slug!r} ({project.taxonomy_version}, overlap {project.overlap}"
                + (
                    ", imported labels count toward it"
                    if project.imported_labels_count_toward_overlap
                    else ""
                )
                + ")"
            )
        )
        if setup.batches_added:
            self.stdout.write(f"Batches added: {', '.join(setup.batches_added)}")
        if setup.members_added:
            self.stdout.write(f"Members added: {', '.join(setup.members_added)}")
        if setup.users_created:
            self.stdout.write(
                self.style.WARNING(
                    f"Users created without a password: {', '.join(setup.users_created)} "
                    "(set one with `python manage.py changepassword NAME`)"
                )
            )
        self.stdout.write(
            f"Assignments created: {setup.assignments_created} "
            f"(total {project.assignments.count()} for {project.batches.count()} batches)"
        )
