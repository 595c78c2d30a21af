"""`manage.py migrate_taxonomy SLUG preview|show|apply|list`: codebook evolution from the command line."""

from __future__ import annotations

from pathlib import Path

import yaml
from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project, TaxonomyMigration
from annotator.services.evolution import (
    MigrationError,
    do_apply_migration,
    do_preview_migration,
    mapping_text,
    parse_changes_text,
    preview_rows,
)


class Command(BaseCommand):
    help = (
        "Move a project to a new taxonomy version derived from its current one. "
        "'preview CHANGES.yaml' derives the version from a YAML list of changes (op: add, rename, merge, split, "
        "retire, edit; see the README) and prints where every mode goes, changing no label; "
        "'apply ID --mapping MAPPING.yaml' moves the project with the mapping you confirm (every old code -> "
        "new code(s) or 'retire'), or '--confirm-preview' to confirm the previewed mapping as printed; "
        "'show ID' prints a preview again; 'list' lists the project's migrations. Exit code 2 with a message "
        "when a request cannot be done (nothing is changed then)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        sub = parser.add_subparsers(dest="action", required=True)
        preview = sub.add_parser(
            "preview", help="Derive the new version and print the mapping (changes no label)"
        )
        preview.add_argument("changes", help="YAML or JSON file: a list of changes")
        preview.add_argument("--label", default="", help="Version label of the new version (e.g. 1.1)")
        show = sub.add_parser("show", help="Print a migration's mapping again")
        show.add_argument("id", type=int, help="Migration id (printed by preview)")
        apply = sub.add_parser("apply", help="Move the project to the previewed version")
        apply.add_argument("id", type=int, help="Migration id (printed by preview)")
        how = apply.add_mutually_exclusive_group(required=True)
        how.add_argument("--mapping", help="YAML file: old code -> new code(s) or 'retire', every old mode")
        how.add_argument(
            "--confirm-preview", action="store_true", help="Confirm the previewed mapping exactly as printed"
        )
        sub.add_parser("list", help="The project's taxonomy migrations")

    def handle(self, *args, slug: str, action: str, **options):
        project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        try:
            getattr(self, f"_{action}")(project, **options)
        except MigrationError as error:
            raise CommandError(str(error), returncode=2) from None

    def _read(self, name: str) -> str:
        try:
            return Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(
                f"Cannot read {Path(name).name}: {error.strerror or error}", returncode=2
            ) from None

    def _migration(self, project: Project, pk: int) -> TaxonomyMigration:
        migration = project.taxonomy_migrations.filter(pk=pk).first()
        if migration is None:
            raise CommandError(f"No taxonomy migration {pk} in {project.slug}", returncode=2)
        return migration

    def _preview(self, project: Project, *, changes: str, label: str, **options) -> None:
        migration = do_preview_migration(project, parse_changes_text(self._read(changes)), label=label)
        self._print(migration)
        self.stdout.write(
            f"Nothing changed yet. To move the project: migrate_taxonomy {project.slug} apply {migration.pk} "
            "--confirm-preview (or --mapping FILE)"
        )

    def _show(self, project: Project, *, id: int, **options) -> None:
        self._print(self._migration(project, id))

    def _apply(
        self, project: Project, *, id: int, mapping: str | None, confirm_preview: bool, **options
    ) -> None:
        migration = self._migration(project, id)
        if confirm_preview:
            confirmed = mapping_text(migration.mapping)
        else:
            try:
                confirmed = yaml.safe_load(self._read(mapping))
            except yaml.YAMLError:
                raise CommandError(f"{Path(mapping).name} is not valid YAML", returncode=2) from None
            if not isinstance(confirmed, dict):
                raise CommandError(
                    "The mapping file must map old codes to new code(s) or 'retire'", returncode=2
                )
        migration = do_apply_migration(migration, confirmed)
        s = migration.summary
        self.stdout.write(
            f"{project.slug} now uses {migration.to_version}: {s['annotations']} annotations changed, "
            f"{s['gold_items']} gold items, {s['threads']} threads, {s['rechecks']} re-checks queued, "
            f"{s['proposals']} proposals accepted"
        )

    def _list(self, project: Project, **options) -> None:
        migrations = list(project.taxonomy_migrations.select_related("from_version", "to_version"))
        if not migrations:
            self.stdout.write("No taxonomy migrations yet.")
        for m in migrations:
            self.stdout.write(
                f"{m.pk}\tv{m.from_version.number} -> v{m.to_version.number}\t{m.status}\t{m.created_at:%Y-%m-%d %H:%M}"
            )

    def _print(self, migration: TaxonomyMigration) -> None:
        rows = preview_rows(migration)
        self.stdout.write(
            f"Migration {migration.pk}: v{migration.from_version.number} -> v{migration.to_version.number} "
            f"({migration.get_status_display()})"
        )
        for row in rows["old"]:
            targets = ", ".join(row["targets"]) or "retire"
            self.stdout.write(f"  {row['code']}\t-> {targets}\t{row['kind']}\t{row['labels']} labels")
        for row in rows["new"]:
            source = f" (from proposals {', '.join(map(str, row['proposals']))})" if row["proposals"] else ""
            self.stdout.write(f"  + {row['code']}\t{row['name']}\tnew{source}")
