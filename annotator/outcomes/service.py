"""`do_import_outcomes`: a results file sets the outcome, score and metadata of a project's traces, all or
nothing. Every record must name a trace of this project (Trace.objects.in_project) by its external id, and
only one: a file that names an unknown trace, or an id two of the project's traces share, changes nothing and
says which record. The failure signatures see the new outcomes at once (the OutcomeImport row is part of their
data version)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction

from annotator.models import OutcomeImport, Project
from annotator.outcomes.parse import OutcomeFileError, OutcomeRecord, ParsedFile, parse_outcome_files
from traces.models import Trace

log = logging.getLogger(__name__)

CHUNK = 2_000  # ids per lookup and rows per bulk update


@dataclass(frozen=True)
class OutcomeResult:
    format: str
    traces: int  # named by the file
    changed: int  # whose outcome, score or metadata differ afterwards
    counts: dict[str, int] = field(default_factory=dict)  # outcome -> traces of those named, afterwards
    dry_run: bool = False
    skipped: int = 0  # ids this project does not hold, left out on request (ignore_unknown)

    def summary(self) -> str:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.counts.items()))
        verb = "would change" if self.dry_run else "changed"
        skipped = f"; {self.skipped} ids this project does not hold skipped" if self.skipped else ""
        return f"{self.traces} traces named ({self.format}): {verb} {self.changed}; outcomes now {counts}{skipped}."


def do_import_outcomes(
    project: Project,
    data: bytes = b"",
    *,
    filename: str = "",
    files: Sequence[tuple[str, bytes]] = (),
    actor=None,
    dry_run: bool = False,
    ignore_unknown: bool = False,
) -> OutcomeResult:
    """Apply the results file `data` (or several, `files` of (name, bytes), read as one) to `project`'s
    traces in one transaction (nothing with `dry_run`). OutcomeFileError lists every bad record; then nothing
    has changed. `ignore_unknown`: ids the project does not hold are skipped (counted) rather than refused,
    for a benchmark's report of a whole run when the project holds part of it. The caller checked the actor
    may change the project's traces (owners: annotator.access MANAGE_ROLES)."""
    files = files or [(filename, data)]
    filename = filename or (files[0][0] if len(files) == 1 else f"{len(files)} files")
    parsed = parse_outcome_files(files)
    with transaction.atomic():
        traces = _project_traces(project, parsed, ignore_unknown=ignore_unknown)
        records = [record for record in parsed.records if record.external_id in traces]
        if not records:
            raise OutcomeFileError(["none of the file's ids is a trace of this project"])
        changed: list[Trace] = []
        for record in records:
            trace = traces[record.external_id]
            if _apply(trace, record):
                changed.append(trace)
        counts = dict(Counter(trace.outcome for trace in traces.values()))
        skipped = len(parsed.records) - len(records)
        result = OutcomeResult(parsed.format, len(records), len(changed), counts, dry_run, skipped)
        if dry_run:
            return result
        for start in range(0, len(changed), CHUNK):
            Trace.objects.bulk_update(changed[start : start + CHUNK], ["outcome", "score", "metadata"])
        OutcomeImport.objects.create(
            project=project,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            filename=filename[-255:],
            format=parsed.format,
            traces=result.traces,
            counts=counts,
        )
    log.info("Outcomes of project %s: %s", project.slug, result.summary())
    return result


def _project_traces(
    project: Project, parsed: ParsedFile, *, ignore_unknown: bool = False
) -> dict[str, Trace]:
    """The project's trace of each record's external id; OutcomeFileError for an unknown or shared id,
    or any problem the parser found (all of them, in the order of the file)."""
    records = parsed.records
    ids = [record.external_id for record in records]
    found: dict[str, list[Trace]] = {}
    for start in range(0, len(ids), CHUNK):
        rows = (
            Trace.objects.in_project(project)
            .filter(external_id__in=ids[start : start + CHUNK])
            .only("pk", "external_id", "outcome", "score", "metadata")
        )
        for trace in rows:
            found.setdefault(trace.external_id, []).append(trace)
    problems = [(_line(problem), problem) for problem in parsed.problems]
    for record in records:
        matches = found.get(record.external_id, [])
        if not matches and ignore_unknown:
            continue
        if not matches:
            problems.append(
                (
                    _line(record.where),
                    f"{record.where}: unknown external id {record.external_id!r:.80} in this project",
                )
            )
        elif len(matches) > 1:
            problems.append(
                (
                    _line(record.where),
                    f"{record.where}: {len(matches)} traces of this project have the external id "
                    f"{record.external_id!r:.80} (in different batches): it cannot say which",
                )
            )
    if problems:
        raise OutcomeFileError([problem for _, problem in sorted(problems, key=lambda pair: pair[0])])
    return {external_id: matches[0] for external_id, matches in found.items()}


def _apply(trace: Trace, record: OutcomeRecord) -> bool:
    """Set the record's values on `trace` (in memory); whether anything changed."""
    before = (trace.outcome, trace.score, trace.metadata)
    if record.outcome is not None:
        trace.outcome = record.outcome
    if record.score is not None:
        trace.score = record.score
    if record.metadata:
        trace.metadata = {**(trace.metadata or {}), **record.metadata}
    return (trace.outcome, trace.score, trace.metadata) != before


def _line(where: str) -> int:
    """The line number a problem starts with ("line 12: ..."), to list problems in file order; others last
    in the order found (a stable sort)."""
    head = where.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 1 << 62
