"""From the database to the agreement report's input arrays, vectorised.

Why not loop over traces: a 100,000-trace project has 200,000 annotations and ~300,000 labels, and the
report must go from the database to a stored result in seconds. So each table is read once with
`values_list` (three queries in all: modes, annotations, labels), turned into numpy arrays, and the
(traces x raters x modes) ratings tensor is filled by fancy indexing -- no Python object per trace.

Filters (all optional, combined with AND) restrict which submitted annotations count:
`batch` (a batch name of the project), `annotators` (usernames), `since` / `until` (dates, inclusive,
on `submitted_at` in the server's time zone), and `where`: trace metadata conditions "key=value" (the
trace's metadata value for key, as text, equals value; several conditions all hold), e.g. "round=Round 3";
`round`: a calibration round of the project (id, or name in params): the annotations of its slots.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, Func, JSONField, Q, QuerySet, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.db.models.lookups import Exact
from django.utils import timezone

from annotator.agreement.report import EvidenceRows, ModeInfo, ReportInput
from annotator.models import Annotation, LabelApplication, Membership, Project, RaterKind, Role
from annotator.raters import kinds_of
from taxonomy.models import FailureMode
from traces.models import in_project_q

FILTER_KEYS = ("batch", "annotators", "since", "until", "where", "round")
MAX_WHERE = 10
MAX_WHERE_CHARS = 200


class ReportFilterError(ValueError):
    """A filter names something that is not in the project, or a date that is not a date."""

    def __init__(self, messages: list[str] | str):
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


def clean_filters(project: Project, params: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical filters (only the keys that are set; annotators sorted) from query or form params.

    `annotators` may be a list or one comma-separated string. Raises ReportFilterError naming every
    problem."""
    errors: list[str] = []
    out: dict[str, Any] = {}
    batch = str(params.get("batch") or "").strip()
    if batch:
        if project.batches.filter(name=batch).exists():
            out["batch"] = batch
        else:
            errors.append(f"No batch “{batch}” in this project")
    raw = params.getlist("annotators") if hasattr(params, "getlist") else params.get("annotators") or []
    if isinstance(raw, str):
        raw = [raw]
    names = sorted({name.strip() for value in raw for name in str(value).split(",") if name.strip()})
    if names:
        known = set(
            Membership.objects.filter(
                project=project, role=Role.ANNOTATOR, user__username__in=names
            ).values_list("user__username", flat=True)
        )
        errors += [f"No annotator “{name}” in this project" for name in names if name not in known]
        out["annotators"] = names
    round_value = str(params.get("round") or "").strip()
    if round_value:
        rounds = project.rounds.all()
        found = (
            rounds.filter(pk=int(round_value))
            if round_value.isdigit() and len(round_value) < 10
            else rounds.none()
        ) or rounds.filter(name=round_value)
        round_id = found.values_list("pk", flat=True).first()
        if round_id is None:
            errors.append(f"No calibration round “{round_value[:100]}” in this project")
        else:
            out["round"] = round_id
    where, where_errors = _clean_where(params)
    errors += where_errors
    if where:
        out["where"] = where
    for key in ("since", "until"):
        value = str(params.get(key) or "").strip()
        if value:
            try:
                out[key] = dt.date.fromisoformat(value).isoformat()
            except ValueError:
                errors.append(f"“{value}” is not a date (use YYYY-MM-DD) for {key}")
    if "since" in out and "until" in out and out["since"] > out["until"]:
        errors.append("The start date is after the end date")
    if errors:
        raise ReportFilterError(errors)
    return out


def _clean_where(params: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Sorted, de-duplicated "key=value" metadata conditions, and the problems with them."""
    raw = params.getlist("where") if hasattr(params, "getlist") else params.get("where") or []
    if isinstance(raw, str):
        raw = [raw]
    conditions, errors = set(), []
    for item in raw:
        text = str(item).strip()
        if not text:
            continue
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            errors.append(
                f"“{text[:MAX_WHERE_CHARS]}” is not a metadata condition: write key=value, e.g. round=Round 3"
            )
        elif len(text) > MAX_WHERE_CHARS:
            errors.append(f"A metadata condition may be at most {MAX_WHERE_CHARS} characters")
        else:
            conditions.add(f"{key.strip()}={value.strip()}")
    if len(conditions) > MAX_WHERE:
        errors.append(f"At most {MAX_WHERE} metadata conditions")
    return sorted(conditions), errors


def where_conditions(filters: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [tuple(item.split("=", 1)) for item in filters.get("where") or []]


def _day_start(day: str) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(dt.date.fromisoformat(day), dt.time.min))


def filter_q(project: Project, filters: Mapping[str, Any], prefix: str = "") -> Q:
    """Submitted annotations of the project matching `filters`; `prefix` reaches Annotation from another
    model (e.g. "annotation__" from LabelApplication), so every query joins instead of nesting."""
    q = Q(**{f"{prefix}status": Annotation.Status.SUBMITTED, f"{prefix}assignment__project": project})
    q &= in_project_q(project, f"{prefix}assignment__trace")  # the project's traces: one definition
    if filters.get("batch"):
        q &= Q(**{f"{prefix}assignment__trace__batch__name": filters["batch"]})
    if filters.get("annotators"):
        q &= Q(**{f"{prefix}assignment__annotator__username__in": filters["annotators"]})
    if filters.get("round"):
        q &= Q(**{f"{prefix}assignment__calibration_round_id": filters["round"]})
    for key, value in where_conditions(filters):
        # KeyTextTransform takes the key as given (no "__" path parsing): any metadata key works.
        q &= Q(Exact(KeyTextTransform(key, f"{prefix}assignment__trace__metadata"), value))
    if filters.get("since"):
        q &= Q(**{f"{prefix}submitted_at__gte": _day_start(filters["since"])})
    if filters.get("until"):
        q &= Q(**{f"{prefix}submitted_at__lt": _day_start(filters["until"]) + dt.timedelta(days=1)})
    return q


def report_annotations(project: Project, filters: Mapping[str, Any]) -> QuerySet[Annotation]:
    return Annotation.objects.filter(filter_q(project, filters))


@dataclass(frozen=True)
class LoadedInput:
    data: ReportInput
    raters: list[dict[str, Any]]  # per rater: username, kind (human/llm), imported (inactive account)


def load_report_input(project: Project, filters: Mapping[str, Any]) -> LoadedInput:
    """The ratings tensor (traces with at least one matching annotation x raters x modes), the primary
    labels for single-primary taxonomies, and the evidence steps, in three queries plus one for names."""
    version = project.taxonomy_version
    mode_rows = list(
        FailureMode.objects.filter(version=version)
        .order_by("order", "id")
        .values_list("id", "code", "name", "category__code", "category__name", "parent__code", "fatal")
    )
    modes = tuple(
        ModeInfo(code, name, category or "", category_name or "", parent, fatal)
        for _, code, name, category, category_name, parent, fatal in mode_rows
    )
    mode_ids = np.array([row[0] for row in mode_rows], dtype=np.int64)
    # .order_by(): the models' default orderings would add a join and a sort of every row for nothing.
    rows = (
        report_annotations(project, filters)
        .order_by()
        .values_list("id", "assignment__trace_id", "assignment__annotator_id")
    )
    ann = np.array(list(rows), dtype=np.int64).reshape(-1, 3)
    labels = list(
        LabelApplication.objects.filter(filter_q(project, filters, prefix="annotation__"))
        .order_by()
        .annotate(evidence_text=_steps_expression())
        .values_list("annotation_id", "mode_id", "primary", "evidence_text")
    )

    _, item_idx = np.unique(ann[:, 1], return_inverse=True)
    n_items = int(item_idx.max()) + 1 if len(ann) else 0
    user_ids, rater_idx = np.unique(ann[:, 2], return_inverse=True)
    raters = _raters(user_ids)
    # Raters in username order (stable across runs and readable), not in user-id order.
    rank = np.argsort(np.argsort([r["username"] for r in raters], kind="stable"))
    raters = [raters[k] for k in np.argsort(rank)]
    rater_idx = rank[rater_idx] if len(ann) else rater_idx
    n_raters, n_modes = len(raters), len(modes)

    ratings = np.full((n_items, n_raters, n_modes), -1, dtype=np.int8)
    ratings[item_idx, rater_idx, :] = 0
    lab_ann = np.array([row[0] for row in labels], dtype=np.int64)
    lab_mode = np.array([row[1] for row in labels], dtype=np.int64)
    order = np.argsort(ann[:, 0])
    position = order[np.searchsorted(ann[order, 0], lab_ann)] if len(labels) else lab_ann
    mode_order = np.argsort(mode_ids)
    mode_pos = mode_order[np.clip(np.searchsorted(mode_ids[mode_order], lab_mode), 0, max(n_modes - 1, 0))]
    known = mode_ids[mode_pos] == lab_mode if len(labels) else np.zeros(0, dtype=bool)
    li, lr, lm = item_idx[position][known], rater_idx[position][known], mode_pos[known]
    ratings[li, lr, lm] = 1
    _mark_missing(ratings, project, filters, ann, item_idx, rater_idx, [row[1] for row in mode_rows])

    primary = None
    if not version.is_multi_label:
        primary = np.full((n_items, n_raters), -1, dtype=np.int64)
        primary[item_idx, rater_idx] = n_modes
        is_primary = np.array([row[2] for row in labels], dtype=bool)[known] if len(labels) else known
        primary[li[is_primary], lr[is_primary]] = lm[is_primary]

    evidence = _evidence(
        [row[3] for row in labels], known, li, lr, lm, steps_only=connection.vendor == "postgresql"
    )
    data = ReportInput(
        ratings=ratings,
        raters=tuple(r["username"] for r in raters),
        modes=modes,
        primary=primary,
        evidence=evidence,
    )
    return LoadedInput(data=data, raters=raters)


def _mark_missing(ratings, project, filters, ann, item_idx, rater_idx, codes: list[str]) -> None:
    """Votes an imported source left out (MAST's NaN) are missing, not "not chosen" (one query)."""
    rows = list(
        report_annotations(project, filters)
        .filter(provenance__has_key="missing_modes")
        .order_by()
        .values_list("id", "provenance")
    )
    if not rows:
        return
    position = {pk: k for k, pk in enumerate(ann[:, 0].tolist())}
    code_pos = {code: j for j, code in enumerate(codes)}
    for pk, provenance in rows:
        k = position.get(pk)
        for code in (provenance or {}).get("missing_modes", []):
            if k is not None and code in code_pos:
                ratings[item_idx[k], rater_idx[k], code_pos[code]] = -1


def _raters(user_ids: np.ndarray) -> list[dict[str, Any]]:
    users = dict(
        (pk, username)
        for pk, username in get_user_model()
        .objects.filter(pk__in=user_ids.tolist())
        .values_list("pk", "username")
    )
    kinds = kinds_of(user_ids.tolist())
    return [
        {
            "username": users[pk],
            # human or llm, as the statistics compare them; `imported` says the labels were made elsewhere.
            "kind": RaterKind.LLM if kinds[pk] == RaterKind.LLM else RaterKind.HUMAN,
            "imported": kinds[pk] == RaterKind.IMPORTED,
        }
        for pk in user_ids.tolist()
    ]


def _steps_expression():
    """The evidence column as JSON text. On PostgreSQL only the step numbers ("[3, 7]"): the database
    extracts them (jsonb_path_query_array), so Python never walks 300,000 small dicts."""
    if connection.vendor == "postgresql":
        steps = Func(
            F("evidence"), Value("$[*].step"), function="jsonb_path_query_array", output_field=JSONField()
        )
        return Cast(steps, TextField())
    return Cast("evidence", TextField())


def _evidence(
    texts: list[str | None], known: np.ndarray, items, raters, modes, *, steps_only: bool
) -> EvidenceRows:
    """Evidence steps as flat arrays. All texts are parsed by one `json.loads` (of a list of them) rather
    than one call per label: at this size the per-call overhead is most of the cost."""
    kept = [text or "[]" for text, ok in zip(texts, known.tolist(), strict=True) if ok]
    parsed = json.loads("[" + ",".join(kept) + "]") if kept else []
    if not steps_only:
        parsed = [
            [entry.get("step") for entry in value if isinstance(entry, dict)]
            if isinstance(value, list)
            else []
            for value in parsed
        ]
    flat_steps = list(chain.from_iterable(parsed))
    if not all(type(step) is int for step in flat_steps):
        # A step that is not a whole number (never written by this app, but JSON allows it) is dropped.
        parsed = [[v for v in value if type(v) is int] for value in parsed]
        flat_steps = list(chain.from_iterable(parsed))
    counts = np.fromiter(map(len, parsed), dtype=np.int64, count=len(parsed))
    flat = np.array(flat_steps, dtype=np.int64)
    return EvidenceRows(
        item=np.repeat(items, counts),
        rater=np.repeat(raters, counts),
        mode=np.repeat(modes, counts),
        step=flat,
    )
