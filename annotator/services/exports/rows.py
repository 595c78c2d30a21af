"""From the database to export rows: traces with nested steps, annotations, gold labels.

Each generator reads in chunks (keyset pages of traces, batches of annotation ids) with `values()`, so no
model instance per step and memory bounded by one chunk however large the project. Only *submitted*
annotations are published (a draft is not a label), and annotators are pseudonymised unless the owner
asks for real names: `annotator-1`, `annotator-2`, ... numbered by user id, so the same export options
give the same names. Language-model raters (``llm:<model>``) keep their names: a model is not a person,
and the prefix is what tells readers (and a re-import) which labels are not human.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from django.db.models import QuerySet

from annotator.models import (
    AdjudicationItem,
    Annotation,
    GoldLabel,
    LabelApplication,
    Project,
    RaterKind,
)
from annotator.raters import kinds_of
from annotator.search.scope import scope_trace_ids
from annotator.services.exports.dataset import ModeColumn
from annotator.services.exports.options import ExportOptions
from traces.answer_key import merged
from traces.models import Step, Trace

TRACES_PER_CHUNK = 200
ANNOTATIONS_PER_CHUNK = 1000
GOLD_STATUSES = (AdjudicationItem.Status.AGREED, AdjudicationItem.Status.RESOLVED)
_TRACE_FIELDS = (
    "id",
    "content_hash",
    "external_id",
    "batch__name",
    "benchmark",
    "system",
    "model",
    "task",
    "outcome",
    "score",
    "metadata",
    "answer_key",
    "step_count",
)
# Depth is derivable from parent_index, so the published dataset leaves it out.
_STEP_FIELDS = ("trace_id", *(name for name in Step.DATA_FIELDS if name != "depth"))


def selected_traces(project: Project, options: ExportOptions) -> QuerySet[Trace]:
    """The traces an export covers: the chosen batches of the project (all by default); with gold_only,
    only those whose gold labels are settled (agreed or adjudicated)."""
    traces = Trace.objects.in_project(project)
    if options.batches:
        traces = traces.filter(batch__name__in=options.batches)
    if options.view_params:
        traces = traces.filter(pk__in=scope_trace_ids(project, options.view_params))
    if options.gold_only:
        traces = traces.filter(adjudications__project=project, adjudications__status__in=GOLD_STATUSES)
    return traces.distinct()


class Pseudonyms:
    """Stable public names: ``annotator-N`` / ``adjudicator-N`` by sorted user id, or the usernames."""

    def __init__(
        self,
        annotators: Iterable[tuple[int, str]],
        adjudicators: Iterable[tuple[int, str]],
        real: bool,
        kinds: dict[int, str] | None = None,
    ):
        self.real = real
        people_by_role = (("annotator", list(annotators)), ("adjudicator", list(adjudicators)))
        # Rater kind per user id (annotator.raters decides); an LLM rater keeps its model name.
        self.kinds = kinds if kinds is not None else kinds_of({u for _, p in people_by_role for u, _ in p})
        self._names: dict[tuple[str, int], str] = {}
        for role, people in people_by_role:
            humans = sorted(
                {uid: name for uid, name in people if self.kinds.get(uid) != RaterKind.LLM}.items()
            )
            for n, (uid, username) in enumerate(humans, start=1):
                self._names[(role, uid)] = username if real else f"{role}-{n}"

    def name(self, role: str, user_id: int | None, username: str | None) -> str | None:
        if user_id is None:
            return None
        if self.kinds.get(user_id) == RaterKind.LLM:
            return username
        return self._names.get((role, user_id), username if self.real else None)

    def count(self, role: str) -> int:
        return sum(1 for r, _ in self._names if r == role)


def pseudonyms_for(project: Project, traces: QuerySet[Trace], real: bool) -> Pseudonyms:
    annotations = _annotations(project, traces)
    annotators = annotations.values_list(
        "assignment__annotator_id", "assignment__annotator__username"
    ).distinct()
    items = _gold_items(project, traces)
    adjudicators = set(items.exclude(resolved_by=None).values_list("resolved_by_id", "resolved_by__username"))
    adjudicators |= set(
        GoldLabel.objects.filter(item__in=items.values("id"))
        .exclude(decided_by=None)
        .values_list("decided_by_id", "decided_by__username")
    )
    return Pseudonyms(list(annotators), adjudicators, real)


def trace_rows(traces: QuerySet[Trace], *, include_text: bool) -> Iterator[dict[str, Any]]:
    """One row per trace, steps nested; keyset-paged by id so every page is one indexed query.

    Keys starting with "_" are for the exporter (size, database id) and are not written."""
    last = 0
    while True:
        page = list(traces.filter(id__gt=last).order_by("id").values(*_TRACE_FIELDS)[:TRACES_PER_CHUNK])
        if not page:
            return
        last = page[-1]["id"]
        steps: dict[int, list[dict[str, Any]]] = {}
        size: dict[int, int] = {}
        rows = Step.objects.filter(trace_id__in=[t["id"] for t in page]).order_by("trace_id", "index")
        for values in rows.values_list(*_STEP_FIELDS):
            step = _step_row(dict(zip(_STEP_FIELDS, values, strict=True)), include_text)
            steps.setdefault(values[0], []).append(step)
            size[values[0]] = (
                size.get(values[0], 0) + len(step["content"] or "") + len(step["tool_args"] or "")
            )
        for trace in page:
            yield {
                "trace_uid": trace["content_hash"],
                "id": trace["external_id"],
                "batch": trace["batch__name"],
                "benchmark": trace["benchmark"],
                "system": trace["system"],
                "model": trace["model"],
                "task": trace["task"],
                "outcome": trace["outcome"],
                "score": trace["score"],
                "step_count": trace["step_count"],
                "metadata": json.dumps(
                    merged(trace["metadata"], trace["answer_key"]), sort_keys=True, ensure_ascii=False
                ),
                "steps": steps.get(trace["id"], []),
                "_bytes": size.get(trace["id"], 0) + len(trace["task"]),
                "_id": trace["id"],
            }


def _step_row(step: dict[str, Any], include_text: bool) -> dict[str, Any]:
    args = step["tool_args"]
    return {
        "index": step["index"],
        "parent": step["parent_index"],
        "agent": step["agent"],
        "role": step["role"],
        "kind": step["kind"],
        "content": step["content"] if include_text else "",
        "tool_name": step["tool_name"],
        "tool_args": json.dumps(args, ensure_ascii=False) if include_text and args is not None else None,
        "tool_call_id": step["tool_call_id"],
        "timestamp": step["timestamp"] or None,
        "tokens": step["tokens"],
        "duration_ms": step["duration_ms"],
    }


def annotation_rows(
    project: Project,
    traces: QuerySet[Trace],
    modes: Sequence[ModeColumn],
    names: Pseudonyms,
    *,
    include_text: bool,
) -> Iterator[dict[str, Any]]:
    """One row per submitted annotation, in trace order then annotator order."""
    fields = (
        "id",
        "assignment__trace__content_hash",
        "assignment__trace__external_id",
        "assignment__annotator_id",
        "assignment__annotator__username",
        "no_failure",
        "ambiguous",
        "confidence",
        "note",
        "submitted_at",
        "provenance",
    )
    annotations = _annotations(project, traces).order_by(
        "assignment__trace_id", "assignment__annotator_id", "id"
    )
    for chunk in _chunks(annotations.values(*fields).iterator(chunk_size=ANNOTATIONS_PER_CHUNK)):
        labels: dict[int, list[tuple]] = {}
        query = LabelApplication.objects.filter(annotation_id__in=[a["id"] for a in chunk])
        for row in query.order_by("annotation_id", "mode__order", "id").values_list(
            "annotation_id", "mode__code", "primary", "evidence", "note"
        ):
            labels.setdefault(row[0], []).append(row[1:])
        for a in chunk:
            username = a["assignment__annotator__username"]
            details = [
                {
                    "mode": code,
                    "primary": primary,
                    "steps": _steps(evidence),
                    "quotes": _quotes(evidence) if include_text else [],
                    "note": note,
                }
                for code, primary, evidence, note in labels.get(a["id"], [])
            ]
            yield {
                "trace_uid": a["assignment__trace__content_hash"],
                "trace_id": a["assignment__trace__external_id"],
                "annotator": names.name("annotator", a["assignment__annotator_id"], username),
                "annotator_kind": names.kinds.get(a["assignment__annotator_id"], RaterKind.HUMAN),
                "no_failure": a["no_failure"],
                "ambiguous": a["ambiguous"],
                "confidence": a["confidence"],
                "note": a["note"],
                "submitted_at": a["submitted_at"].isoformat() if a["submitted_at"] else None,
                **_label_columns(details, modes, missing_modes(a["provenance"])),
            }


def gold_rows(
    project: Project, traces: QuerySet[Trace], modes: Sequence[ModeColumn], names: Pseudonyms
) -> Iterator[dict[str, Any]]:
    """One row per trace with settled gold labels, each label with its provenance (source, decider)."""
    fields = (
        "id",
        "trace_id",
        "trace__model",
        "trace__content_hash",
        "trace__external_id",
        "status",
        "disputed",
        "resolved_by_id",
        "resolved_by__username",
        "resolved_at",
        "note",
    )
    items = _gold_items(project, traces).order_by("trace_id", "id")
    for chunk in _chunks(items.values(*fields).iterator(chunk_size=ANNOTATIONS_PER_CHUNK)):
        gold: dict[int, list[tuple]] = {}
        query = GoldLabel.objects.filter(item_id__in=[i["id"] for i in chunk])
        for row in query.order_by("item_id", "mode__order", "id").values_list(
            "item_id",
            "mode__code",
            "primary",
            "evidence",
            "source",
            "reason_code",
            "note",
            "decided_by_id",
            "decided_by__username",
        ):
            gold.setdefault(row[0], []).append(row[1:])
        for item in chunk:
            details = [
                {
                    "mode": code,
                    "primary": primary,
                    "steps": _steps(evidence),
                    "source": source,
                    "reason_code": reason,
                    "note": note,
                    "decided_by": names.name("adjudicator", decider_id, decider),
                }
                for code, primary, evidence, source, reason, note, decider_id, decider in gold.get(
                    item["id"], []
                )
            ]
            yield {
                "trace_uid": item["trace__content_hash"],
                "trace_id": item["trace__external_id"],
                "status": item["status"],
                "disputed": [str(code) for code in item["disputed"] or []],
                "adjudicator": names.name(
                    "adjudicator", item["resolved_by_id"], item["resolved_by__username"]
                ),
                "resolved_at": item["resolved_at"].isoformat() if item["resolved_at"] else None,
                "note": item["note"],
                **_label_columns(details, modes),
                "_trace_id": item["trace_id"],
                "_model": item["trace__model"],
            }


def _annotations(project: Project, traces: QuerySet[Trace]) -> QuerySet[Annotation]:
    return Annotation.objects.submitted_in(project).filter(
        assignment__trace__in=traces.order_by().values("id")
    )


def _gold_items(project: Project, traces: QuerySet[Trace]) -> QuerySet[AdjudicationItem]:
    return AdjudicationItem.objects.filter(
        project=project, status__in=GOLD_STATUSES, trace__in=traces.order_by().values("id")
    )


def missing_modes(provenance: Any) -> frozenset[str]:
    """Modes an (imported) annotation has no value for: their columns stay empty, never 0 ("not chosen")."""
    missing = provenance.get("missing_modes") if isinstance(provenance, dict) else None
    return frozenset(c for c in missing if isinstance(c, str)) if isinstance(missing, list) else frozenset()


def _label_columns(
    details: list[dict[str, Any]], modes: Sequence[ModeColumn], missing: frozenset[str] = frozenset()
) -> dict[str, Any]:
    chosen = {d["mode"] for d in details}
    primary = next((d["mode"] for d in details if d["primary"]), None)
    return {
        "labels": [d["mode"] for d in details],
        "primary_label": primary,
        "evidence_steps": sorted({s for d in details for s in d["steps"]}),
        "label_details": details,
        **{
            m.column: None if m.code in missing and m.code not in chosen else int(m.code in chosen)
            for m in modes
        },
    }


def _steps(evidence: Any) -> list[int]:
    out = []
    for item in evidence or []:
        step = item.get("step") if isinstance(item, dict) else item
        if isinstance(step, int) and not isinstance(step, bool):
            out.append(step)
    return out


def _quotes(evidence: Any) -> list[str]:
    return [str(i["quote"]) for i in evidence or [] if isinstance(i, dict) and i.get("quote")]


def _chunks(
    rows: Iterator[dict[str, Any]], size: int = ANNOTATIONS_PER_CHUNK
) -> Iterator[list[dict[str, Any]]]:
    while chunk := list(islice(rows, size)):
        yield chunk
