from django.core.management.base import BaseCommand, CommandError

from traces.exports import export_native
from traces.models import Batch


class Command(BaseCommand):
    help = (
        "Write a batch's traces in the native JSONL format (one trace per line, see docs/importing.md), to stdout or "
        "--out. Native files round-trip exactly: importing the output and exporting again gives the same bytes."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="Batch name")
        parser.add_argument("--format", choices=["jsonl"], default="jsonl", help="Output format (jsonl)")
        parser.add_argument("--out", help="Write to this file instead of stdout")

    def handle(self, *args, batch, format, out, **options):
        found = Batch.objects.filter(name=batch).first()
        if found is None:
            raise CommandError(f"No batch {batch!r}", returncode=2)
        if out:
            with open(out, "w", encoding="utf-8") as handle:
                count = export_native(found, handle)
            self.stderr.write(f"{count} traces written to {out}")
        else:
            export_native(found, self.stdout)
