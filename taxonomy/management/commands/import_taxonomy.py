from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from taxonomy.schema import TaxonomyFileError
from taxonomy.services import import_taxonomy_file

SUFFIXES = (".yaml", ".yml", ".json")


class Command(BaseCommand):
    help = (
        "Import taxonomies from YAML or JSON files, or folders of them (the format `export_taxonomy` writes; "
        "see docs/taxonomies.md). Every file is validated: a malformed file exits non-zero naming the file and the "
        "offending field, and nothing is created."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "files",
            nargs="+",
            type=Path,
            help="Taxonomy files (.yaml/.yml/.json), or folders of them (recursively, in path order)",
        )
        parser.add_argument(
            "--slug", help="Store under this slug instead of the one in the file (one file only)"
        )

    def handle(self, *args, files: list[Path], slug: str | None, **options):
        found = list(_expand(files))
        if slug and len(found) > 1:
            raise CommandError(f"--slug names one taxonomy, but {len(found)} files were given", returncode=2)
        with transaction.atomic():  # all or nothing, like every import
            for file in found:
                try:
                    version, changed = import_taxonomy_file(file, slug=slug)
                except TaxonomyFileError as error:
                    raise CommandError(f"{file}: {error}", returncode=2) from None
                modes = version.modes.count()
                state = "imported" if changed else "unchanged (identical to the latest version)"
                self.stdout.write(f"{version.taxonomy.slug} version {version.number}: {modes} modes, {state}")


def _expand(paths: list[Path]):
    """Files as given; a folder as its taxonomy files in a stable order (taxonomy knows nothing of the
    annotator's path helpers, hence this small copy of the same walk)."""
    for path in paths:
        if path.is_dir():
            inside = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not inside:
                raise CommandError(f"{path}: no {', '.join(SUFFIXES)} files in this folder", returncode=2)
            yield from inside
        elif path.exists():
            yield path
        else:
            raise CommandError(f"{path}: no such file or folder", returncode=2)
