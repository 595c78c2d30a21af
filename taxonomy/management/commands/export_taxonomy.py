import json

import yaml
from django.core.management.base import BaseCommand, CommandError

from taxonomy.models import TaxonomyVersion
from taxonomy.schema import dump_taxonomy
from taxonomy.services import resolve_version, version_to_spec


class Command(BaseCommand):
    help = (
        "Write a taxonomy (categories, modes, definitions, guidance, aliases) as YAML or JSON, in the format "
        "`import_taxonomy` reads, to stdout or --out."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Taxonomy slug, e.g. mast")
        parser.add_argument("--format", choices=["yaml", "json"], default="yaml")
        parser.add_argument(
            "--taxonomy-version", dest="number", type=int, help="Version number (default: newest)"
        )
        parser.add_argument("--out", help="Write to this file instead of stdout")

    def handle(self, *args, slug: str, format: str, number: int | None, out: str | None, **options):
        try:
            version = resolve_version(slug, number)
        except TaxonomyVersion.DoesNotExist as error:
            raise CommandError(str(error), returncode=2) from None
        data = dump_taxonomy(version_to_spec(version))
        if format == "json":
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        else:
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        if out:
            with open(out, "w", encoding="utf-8") as handle:
                handle.write(text)
        else:
            self.stdout.write(text, ending="")
