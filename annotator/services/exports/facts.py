"""Everything the dataset card states, gathered once: counts tallied from the rows actually written, the
taxonomy, how the labels were made, and the agreement report.

Why tally the rows instead of querying again: the card must describe exactly the files beside it (the
same batches, the same gold-only filter, the same moment), and the rows pass through the exporter
anyway. The ORM part (taxonomy, process, agreement) is small and lives in :func:`gather_facts`.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from annotator.models import AdjudicationItem, Annotation, Assignment, Project
from annotator.models.jobs import JobStatus
from annotator.services import reports
from annotator.services.exports.dataset import ConfigFiles, ModeColumn
from annotator.services.exports.options import ExportOptions
from annotator.services.exports.rows import selected_traces
from annotator.services.provenance import LabelProvenance, label_provenance
from taxonomy.models import Taxonomy

log = logging.getLogger(__name__)


@dataclass
class Tally:
    """Counts over the written rows (pure: rows in, counters out)."""

    traces: int = 0
    steps: int = 0
    batches: Counter = field(default_factory=Counter)
    models: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    benchmarks: Counter = field(default_factory=Counter)
    systems: Counter = field(default_factory=Counter)
    annotations: int = 0
    annotators: set = field(default_factory=set)
    llm_raters: set = field(default_factory=set)
    no_failure: int = 0  # annotations whose rater said "no failure" (never inferred from an empty label list)
    no_verdict: int = 0  # annotations with neither a label nor "no failure": nobody said anything
    mode_annotations: Counter = field(default_factory=Counter)
    mode_traces: Counter = field(default_factory=Counter)  # traces where at least one annotator chose it
    per_trace: Counter = field(default_factory=Counter)  # annotations per trace -> traces
    gold_traces: int = 0
    gold_modes: Counter = field(default_factory=Counter)
    gold_status: Counter = field(default_factory=Counter)
    gold_by_model: dict = field(default_factory=dict)  # model -> Counter of gold modes
    # Annotation rows come grouped by trace: only the current trace is held, never one entry per trace.
    _uid: str | None = None
    _group: int = 0
    _modes: set = field(default_factory=set)

    def trace(self, row: dict[str, Any]) -> None:
        self.traces += 1
        self.steps += len(row["steps"])
        self.batches[row["batch"]] += 1
        self.models[row["model"] or "(unknown)"] += 1
        self.outcomes[row["outcome"]] += 1
        self.benchmarks[row["benchmark"] or "(unknown)"] += 1
        self.systems[row["system"] or "(unknown)"] += 1

    def annotation(self, row: dict[str, Any]) -> None:
        self.annotations += 1
        (self.llm_raters if row["annotator_kind"] == "llm" else self.annotators).add(row["annotator"])
        self.no_failure += bool(row["no_failure"])
        self.no_verdict += not row["no_failure"] and not row["labels"]
        self.mode_annotations.update(row["labels"])
        if row["trace_uid"] != self._uid:
            self._close_group()
            self._uid = row["trace_uid"]
        self._group += 1
        self.mode_traces.update(set(row["labels"]) - self._modes)
        self._modes.update(row["labels"])

    def gold(self, row: dict[str, Any]) -> None:
        self.gold_traces += 1
        self.gold_status[row["status"]] += 1
        self.gold_modes.update(row["labels"])
        model = row.get("_model") or "(unknown)"
        self.gold_by_model.setdefault(model, Counter()).update(row["labels"] or ["(no failure)"])

    def _close_group(self) -> None:
        if self._group:
            self.per_trace[self._group] += 1
        self._group, self._modes = 0, set()

    def overlap_histogram(self) -> Counter:
        """How many traces have 1, 2, 3 ... annotations (0 for the exported traces nobody labelled)."""
        self._close_group()
        self._uid = None
        histogram = Counter(self.per_trace)
        histogram[0] += max(0, self.traces - sum(self.per_trace.values()))
        return +histogram


@dataclass(frozen=True)
class ModeFacts:
    code: str
    name: str
    definition: str
    category: str
    category_name: str
    parent: str | None
    fatal: bool
    column: str


@dataclass
class Agreement:
    """The agreement report's numbers the card shows, or why there are none."""

    results: dict[str, Any] | None
    report_id: int | None = None
    computed_at: str = ""
    scope: str = "all submitted annotations of the project"
    missing_reason: str = ""


@dataclass
class CardFacts:
    project_name: str
    project_slug: str
    description: str
    options: ExportOptions
    taxonomy_slug: str
    taxonomy_name: str
    taxonomy_version: int
    labelling_mode: str
    taxonomy_description: str
    citation: str
    source_url: str
    modes: list[ModeFacts]
    overlap: int
    blind: bool
    has_guidelines: bool
    adjudication: dict[str, int]
    agreement: Agreement
    tally: Tally
    configs: list[ConfigFiles] = field(default_factory=list)
    provenance: LabelProvenance = field(default_factory=LabelProvenance)


def mode_facts(project: Project, columns: list[ModeColumn]) -> list[ModeFacts]:
    column = {c.code: c.column for c in columns}
    modes = project.taxonomy_version.modes.select_related("category", "parent").order_by("order", "id")
    return [
        ModeFacts(
            code=m.code,
            name=m.name,
            definition=m.definition,
            category=m.category.code if m.category else "",
            category_name=m.category.name if m.category else "",
            parent=m.parent.code if m.parent else None,
            fatal=m.fatal,
            column=column.get(m.code, ""),
        )
        for m in modes
    ]


def gather_facts(
    project: Project,
    options: ExportOptions,
    columns: list[ModeColumn],
    tally: Tally,
    configs: list[ConfigFiles],
) -> CardFacts:
    version = project.taxonomy_version
    taxonomy = Taxonomy.objects.get(pk=version.taxonomy_id)  # fresh: the card quotes its citation
    items = AdjudicationItem.objects.filter(project=project).values_list("status", flat=True)
    return CardFacts(
        project_name=project.name,
        project_slug=project.slug,
        description=project.description,
        options=options,
        taxonomy_slug=taxonomy.slug,
        taxonomy_name=taxonomy.name,
        taxonomy_version=version.number,
        labelling_mode=version.labelling_mode,
        taxonomy_description=taxonomy.description,
        citation=taxonomy.citation,
        source_url=taxonomy.source_url,
        modes=mode_facts(project, columns),
        overlap=project.overlap,
        blind=project.blind,
        has_guidelines=bool(project.guidelines.strip()),
        adjudication=dict(Counter(items)),
        agreement=agreement_for(project, options),
        tally=tally,
        configs=configs,
        provenance=label_provenance(
            Annotation.objects.filter(
                assignment__project=project,
                assignment__purpose=Assignment.Purpose.WORK,
                status=Annotation.Status.SUBMITTED,
                assignment__trace__in=selected_traces(project, options).order_by().values("id"),
            )
        ),
    )


def agreement_for(project: Project, options: ExportOptions) -> Agreement:
    """The current agreement report (computed here when none describes the current annotations).

    One batch exported: the report filtered to that batch; otherwise the project-wide report, and the card
    says so. Never fails the export: a missing or failing reports service becomes an explicit sentence."""
    filters = {"batch": options.batches[0]} if len(options.batches) == 1 else {}
    scope = f"submitted annotations of batch {options.batches[0]!r}" if filters else ""
    try:
        report = reports.do_request_report(project, filters, enqueue=False)
        if report.status != JobStatus.SUCCEEDED:
            report = reports.do_compute_report(report.pk)
    except Exception as error:  # a report is a nicety of the card, not a reason to lose the export
        log.warning("export of %s: agreement report unavailable: %s", project.slug, error)
        return Agreement(None, missing_reason=f"the agreement report could not be computed ({error})")
    if report.status != JobStatus.SUCCEEDED or not report.results:
        return Agreement(None, missing_reason=f"the agreement report failed: {report.error or report.status}")
    return Agreement(
        results=report.results,
        report_id=report.pk,
        computed_at=report.computed_at.isoformat() if report.computed_at else "",
        scope=scope or "all submitted annotations of the project",
    )
