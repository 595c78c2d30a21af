import os
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Export, Project
from annotator.services.exports import (
    LICENSES,
    ExportOptionsError,
    clean_options,
    do_run_export,
    export_status,
)
from annotator.services.exports.tables import FORMATS, KINDS, encode, label_table


class Command(BaseCommand):
    help = (
        "Export a project as a Hugging Face dataset folder (parquet configs traces, annotations and gold, a "
        "dataset card with the taxonomy and the agreement per mode, taxonomy.yaml) and optionally publish it "
        "to the Hub. The Hub token is read from the HF_TOKEN environment variable, never from an argument. "
        "The folder loads with datasets.load_dataset(DIR, 'traces') and imports back with import_traces. "
        "With --format csv or jsonl it writes one label table instead (--kind annotations: one row per "
        "submitted annotation; labels: one row per label with its evidence steps and quotes; gold: one row "
        "per settled trace), to the file --out names ('-' for standard output), with the same traces, "
        "pseudonyms and formula-safe CSV cells as the page and the API."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument(
            "--out",
            required=True,
            type=Path,
            help="Folder to write (must be empty or new); with --format csv/jsonl, the file ('-': stdout)",
        )
        parser.add_argument(
            "--format",
            dest="table_format",
            choices=("hub", *FORMATS),
            default="hub",
            help="hub (default): the dataset folder; csv or jsonl: one label table (see --kind)",
        )
        parser.add_argument(
            "--kind",
            choices=KINDS,
            default="annotations",
            help="With --format csv/jsonl: annotations (one row per annotation, a 0/1 column per mode, empty "
            "for a missing vote), labels (one row per label with evidence) or gold",
        )
        parser.add_argument("--push-to-hub", dest="repo_id", metavar="REPO_ID", help="Publish to owner/name")
        parser.add_argument("--private", action="store_true", help="Create the Hub repo as private")
        parser.add_argument("--license", default="cc-by-4.0", choices=LICENSES)
        parser.add_argument(
            "--batch", dest="batches", action="append", default=[], help="Only this batch (repeatable)"
        )
        parser.add_argument("--gold-only", action="store_true", help="Only traces with settled gold labels")
        parser.add_argument("--view", default="", help="Only the traces of this saved view (its name or id)")
        parser.add_argument(
            "--no-raw-text", action="store_true", help="Drop step content, tool arguments and quoted evidence"
        )
        parser.add_argument(
            "--real-names", action="store_true", help="Annotators' usernames instead of annotator-N"
        )
        parser.add_argument("--commit-message", default="", help="Hub commit message")
        parser.add_argument("--pretty-name", default="", help="The dataset card's title")

    def handle(self, *args, slug, out: Path, repo_id, table_format, kind, **opts):
        project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        if table_format != "hub":
            return self._table(project, out, table_format, kind, opts, repo_id)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(f"{out} exists and is not an empty folder", returncode=2)
        if repo_id and not os.environ.get("HF_TOKEN"):
            raise CommandError("--push-to-hub needs a Hugging Face write token in HF_TOKEN", returncode=2)
        try:
            options = clean_options(
                project,
                {
                    "batches": opts["batches"],
                    "gold_only": opts["gold_only"],
                    "view": opts["view"],
                    "include_text": not opts["no_raw_text"],
                    "real_names": opts["real_names"],
                    "license": opts["license"],
                    "repo_id": repo_id or "",
                    "private": opts["private"],
                    "commit_message": opts["commit_message"],
                    "pretty_name": opts["pretty_name"],
                },
            )
        except ExportOptionsError as error:
            raise CommandError("\n".join(error.messages), returncode=2) from None
        export = Export.objects.create(
            project=project, options=options.as_dict(), target_repo=options.repo_id
        )
        export = do_run_export(export.pk, out_dir=out)
        status = export_status(export)
        for line in status["log"]:
            if not line.startswith("Error: "):
                self.stdout.write(f"  {line}")
        if export.status != "succeeded":
            raise CommandError(status["error"] or "The export failed", returncode=1)
        self.stdout.write(self.style.SUCCESS(f"Dataset written to {out}"))
        if export.commit_url:
            self.stdout.write(self.style.SUCCESS(f"Published: {export.commit_url}"))

    def _table(self, project, out: Path, fmt: str, kind: str, opts: dict, repo_id) -> None:
        if repo_id:
            raise CommandError("--push-to-hub publishes the dataset folder: leave out --format", returncode=2)
        if str(out) != "-" and out.is_dir():
            raise CommandError(f"{out} is a folder: --format {fmt} writes one file", returncode=2)
        try:
            options = clean_options(
                project,
                {
                    "batches": opts["batches"],
                    "gold_only": opts["gold_only"],
                    "view": opts["view"],
                    "include_text": not opts["no_raw_text"],
                    "real_names": opts["real_names"],
                },
            )
        except ExportOptionsError as error:
            raise CommandError("\n".join(error.messages), returncode=2) from None
        chunks = encode(label_table(project, options, kind), fmt)
        if str(out) == "-":
            for chunk in chunks:
                sys.stdout.write(chunk)
            return
        with out.open("w", encoding="utf-8", newline="") as stream:
            for chunk in chunks:
                stream.write(chunk)
        self.stdout.write(self.style.SUCCESS(f"{kind} written to {out} ({fmt})"))
