from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.management.paths import TRACE_SUFFIXES, expand_paths
from annotator.management.reporting import report_attribution_conflicts
from annotator.models import Project
from annotator.services.annotation_files import LABEL_FORMATS, read_label_file
from annotator.services.label_import import LabelImportError, do_import_annotations
from traces.importers.records import TraceFormatError


class Command(BaseCommand):
    help = (
        "Import existing labels from files or folders into a project as submitted annotations, all or "
        "nothing. Formats: 'jsonl' "
        '(one {"trace", "annotator", "labels": [{"mode", "steps", "primary", "note"}], "ambiguous", '
        '"no_failure"} per line; traces matched by external id), and the labels inside MAST human-labelled, '
        "Who&When and native trace files (traces matched by content, so import the traces first). Mode "
        "names map through the taxonomy's codes, names and aliases. Unknown annotators become inactive "
        "imported users. An annotation that already exists is never overwritten."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="+",
            type=Path,
            help="Label files, or folders (their .json, .jsonl, .ndjson, .traj and .eval files, recursively, "
            "in path order); all are imported together or not at all",
        )
        parser.add_argument("--project", required=True, help="Project slug")
        parser.add_argument("--format", choices=LABEL_FORMATS, help="Force a format (default: detect)")
        parser.add_argument(
            "--ignore-unknown-modes",
            action="store_true",
            help="Skip labels whose mode is not in the project's taxonomy instead of failing",
        )

    def handle(
        self,
        *args,
        paths: list[Path],
        project: str,
        format: str | None,
        ignore_unknown_modes: bool,
        **options,
    ):
        target = Project.objects.select_related("taxonomy_version").filter(slug=project).first()
        if target is None:
            raise CommandError(f"No project {project!r}", returncode=2)
        files = list(expand_paths(paths, TRACE_SUFFIXES))
        incoming = (
            annotation
            for path in files
            for annotation in read_label_file(target, path, format, name=str(path))
        )
        try:
            result = do_import_annotations(target, incoming, ignore_unknown_modes=ignore_unknown_modes)
        except (LabelImportError, TraceFormatError) as error:
            raise CommandError(f"Nothing imported: {error}", returncode=2) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.created} annotations with {result.labels} labels imported into {target.slug}"
                + (f", {result.unchanged} already present" if result.unchanged else "")
            )
        )
        if result.users_created:
            self.stdout.write(
                f"New imported annotators (inactive accounts): {', '.join(result.users_created)}"
            )
        for mode, count in result.ignored_modes.most_common():
            self.stdout.write(f"  ignored {count} labels of unknown mode {mode!r}")
        report_attribution_conflicts(self, result.attribution_conflicts)
