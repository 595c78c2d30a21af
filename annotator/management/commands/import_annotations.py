from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.management.paths import TRACE_SUFFIXES, expand_paths
from annotator.management.reporting import report_label_details
from annotator.models import Project
from annotator.services.annotation_files import LABEL_FORMATS, read_label_file
from annotator.services.label_import import LabelImportError, do_import_annotations, parse_rater_map
from traces.importers import storable
from traces.importers.records import TraceFormatError


class Command(BaseCommand):
    # The system checks import every view and URL module (a second or more at start-up) and find nothing
    # an import needs: `manage.py check` and the test suite run them.
    requires_system_checks = []

    help = (
        "Import existing labels from files or folders into a project as submitted annotations, all or "
        "nothing. Formats: 'jsonl' "
        '(one {"trace", "annotator", "labels": [{"mode", "steps", "primary", "note"}], "ambiguous", '
        '"no_failure"} per line; traces matched by external id), and the labels inside MAST human-labelled, '
        "Who&When and native trace files (traces matched by content, so import the traces first). Mode "
        "names map through the taxonomy's codes, names and aliases. Raters in the file become inactive "
        "imported raters namespaced by the file, unless --map-rater names an account. A record that says "
        "nothing (no label, no no_failure) is skipped, and a vote the file leaves out stays missing. An "
        "annotation that already exists is never overwritten."
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
            help="Skip labels whose mode is not in the project's taxonomy instead of failing (listed in the "
            "summary and kept on the annotation's provenance)",
        )
        parser.add_argument(
            "--map-rater",
            action="append",
            default=[],
            metavar="NAME=USERNAME",
            help="Attribute the labels of rater NAME in the file to the existing account USERNAME (who joins "
            "the project as an annotator). Without it, every rater becomes an inactive imported rater "
            "namespaced by the file (e.g. labels/a1 for labels.jsonl), never a real account. Repeatable.",
        )

    def handle(
        self,
        *args,
        paths: list[Path],
        project: str,
        format: str | None,
        ignore_unknown_modes: bool,
        map_rater: list[str],
        **options,
    ):
        problem = storable.option_problem({"--project": project, "--map-rater": map_rater})
        if problem:
            raise CommandError(f"Nothing imported: {problem}", returncode=2)
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
            result = do_import_annotations(
                target,
                incoming,
                ignore_unknown_modes=ignore_unknown_modes,
                rater_map=parse_rater_map(map_rater),
            )
        except (LabelImportError, TraceFormatError) as error:
            raise CommandError(f"Nothing imported: {error}", returncode=2) from None
        except Exception as error:
            refused = storable.database_refusal(error)  # a check missing: still the data's fault, said so
            if refused is None:
                raise
            raise CommandError(
                f"Nothing imported: the database refused a value: {refused}", returncode=2
            ) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.created} annotations with {result.labels} labels imported into {target.slug}"
                + (f", {result.unchanged} already present" if result.unchanged else "")
            )
        )
        if result.users_created:
            self.stdout.write(
                f"New imported raters (inactive, never given work): {', '.join(result.users_created)}"
            )
        report_label_details(self, result)
