"""Read labels from files for `import_annotations`: the generic JSONL, or the labels inside trace files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotator.label_formats import parse_annotations_jsonl
from annotator.models import Project
from annotator.raters import rater_source
from annotator.services.label_import import IncomingAnnotation, LabelImportError, voted_modes
from traces import importers
from traces.importers import limits
from traces.importers.records import TraceFormatError
from traces.models import Trace
from traces.services import content_hash

LABEL_FORMATS = ("jsonl", "mast_labelled", "who_and_when", "native")


def detect_label_format(path: Path, name: str = "") -> str:
    name = name or path.name
    with path.open("rb") as stream:
        first = next((line for line in stream if line.strip()), b"")
    try:
        obj = limits.json_loads(first)
    except ValueError:  # LimitExceeded too: the format's parser then names the line
        obj = None
    if isinstance(obj, dict) and "trace" in obj and "steps" not in obj:
        return "jsonl"
    fmt = importers.detect_head(importers.read_head(path), name)
    if fmt not in LABEL_FORMATS:
        raise TraceFormatError(
            f"{fmt} files carry no labels; label files are: {', '.join(LABEL_FORMATS)}", file=name
        )
    return fmt


def read_label_file(
    project: Project, path: Path, fmt: str | None = None, *, name: str = ""
) -> Iterator[IncomingAnnotation]:
    """Yield the file's annotations matched to the project's traces; unmatched traces are an error.

    ``name`` is how messages call the file (default: its name); a file found in a folder passes its path as
    typed, so two ``12.json`` in different subfolders stay apart, as they do for ``import_traces``. The
    file's name namespaces its raters."""
    name = name or path.name
    fmt = fmt or detect_label_format(path, name)
    source = rater_source(path.name)
    traces = Trace.objects.in_project(project).only("id", "external_id", "step_count")
    if fmt == "jsonl":
        by_external: dict[str, list[Trace]] = {}
        for trace in traces:
            by_external.setdefault(trace.external_id, []).append(trace)
        with path.open("rb") as stream:
            for line in parse_annotations_jsonl(stream, name):
                found = by_external.get(line.trace, [])
                where = f"{name}, line {line.line}"
                if not found:
                    raise LabelImportError(f"{where}: no trace {line.trace!r} in project {project.slug}")
                if len(found) > 1:
                    raise LabelImportError(f"{where}: trace id {line.trace!r} is ambiguous in {project.slug}")
                yield IncomingAnnotation(
                    found[0], line.annotation, confidence=line.confidence, where=where, source=source
                )
        return
    head = importers.read_head(path)
    with path.open("rb") as stream:
        for record in importers.parse_file(stream, name, head, fmt):
            if not record.annotations:
                continue
            trace = traces.filter(content_hash=content_hash(record)).first()
            where = f"{name}, record {record.record_no}"
            if trace is None:
                raise LabelImportError(
                    f"{where}: trace {record.external_id!r} is not in project {project.slug}; import the traces "
                    f"first (import_traces {name} --batch NAME --project {project.slug} also imports labels)"
                )
            for annotation in record.annotations:
                yield IncomingAnnotation(
                    trace, annotation, where=where, source=source, voted=voted_modes(fmt, record.metadata)
                )
