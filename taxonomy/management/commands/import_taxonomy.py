from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from taxonomy.schema import TaxonomyFileError
from taxonomy.services import import_taxonomy_file


class Command(BaseCommand):
    help = (
        "Import a taxonomy from a YAML or JSON file (the format `export_taxonomy` writes; see README). "
        "The whole file is validated first: a malformed file exits non-zero naming the offending field and "
        "creates nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="Path to the .yaml/.yml/.json taxonomy file")
        parser.add_argument("--slug", help="Store under this slug instead of the one in the file")

    def handle(self, *args, file: Path, slug: str | None, **options):
        if not file.exists():
            raise CommandError(f"{file}: no such file", returncode=2)
        try:
            version, changed = import_taxonomy_file(file, slug=slug)
        except TaxonomyFileError as error:
            raise CommandError(f"{file}: {error}", returncode=2) from None
        modes = version.modes.count()
        state = "imported" if changed else "unchanged (identical to the latest version)"
        self.stdout.write(f"{version.taxonomy.slug} version {version.number}: {modes} modes, {state}")
