"""The label filters of the filter language (label state, a mode in the gold, in human or model labels,
disputed, between two raters, evidence on a step kind or tool, a failure signature's cell), as `Q` objects
over one project's traces; annotator.search.service applies them after its content filters and the blind
check. Label filters are uncorrelated `id IN (...)` subqueries with mode and rater ids read once
(`_Context`); on PostgreSQL the dispute and evidence filters read summaries kept by triggers on the label
summary (migrations annotator 0035 and 0041)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL

from annotator.access import ProjectAccess
from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel, LabelApplication
from annotator.models.raters import Rater, RaterKind
from annotator.search.filters import FilterError, TraceFilter, rater_names
from annotator.search.indexing import uses_search_table as _is_postgres
from annotator.search.signature_filter import signature_q

# The name a condition's correlated subquery calls the outer row's trace id by: the trace list and the
# membership rows it is counted on (annotator.search.service) each alias their own column to it.
TRACE_REF = "trace_ref"
GOLD_STATUSES = (AdjudicationItem.Status.AGREED, AdjudicationItem.Status.RESOLVED)


def label_conditions(access: ProjectAccess, flt: TraceFilter, modes: dict[str, int]) -> list[Q]:
    """`flt`'s label filters, each a condition on the trace id (`modes`: the mode ids of the codes it
    names): `pk__...` lookups, or subqueries correlated by `OuterRef(TRACE_REF)`. The caller has checked
    that this member may see labels (service.check_blind)."""
    if not (flt.state or flt.reveals_labels):
        return []
    ctx = _Context.of(access, modes)
    conditions = []
    if flt.state:
        conditions.append(_state_q(ctx, flt.state))
    if flt.gold_mode:
        gold = GoldLabel.objects.filter(
            item__project=access.project, item__status__in=GOLD_STATUSES, mode_id=modes[flt.gold_mode]
        )
        conditions.append(Q(pk__in=gold.values("item__trace_id")))
    if flt.human_mode:
        human = ctx.labels(flt.human_mode).exclude(annotation__assignment__annotator_id__in=ctx.llm_ids)
        conditions.append(Q(pk__in=human.values("annotation__assignment__trace_id")))
    if flt.llm_mode:
        llm = ctx.labels(flt.llm_mode).filter(annotation__assignment__annotator_id__in=ctx.llm_ids)
        conditions.append(Q(pk__in=llm.values("annotation__assignment__trace_id")))
    if flt.pair:
        conditions.append(pair_q(ctx, flt.pair, flt.disputed_mode))
    elif flt.raters:
        conditions.append(raters_q(ctx, rater_names(flt.raters), flt.disputed_mode))
    elif flt.disputed_mode:
        conditions.append(_disputed_q(ctx, flt.disputed_mode))
    if flt.evidence_kind or flt.evidence_tool:
        conditions.append(Q(pk__in=_evidence_sql(flt, access.project.pk)))
    if flt.sig_mode:
        conditions.append(signature_q(access, flt.sig_mode, flt.sig_source or "gold"))
    return conditions


@dataclass
class _Context:
    """What the label filters need, read once per request: the mode ids of the codes asked for and the
    rater ids by kind (a few users), so each filter is one uncorrelated `id IN (...)` subquery that
    PostgreSQL runs once and hashes, rather than a subquery per trace joined to users and rater kinds."""

    access: ProjectAccess
    modes: dict[str, int]
    llm_ids: list[int]
    not_filling_ids: list[int]  # raters whose labels fill no overlap slot (annotator.raters)

    @classmethod
    def of(cls, access: ProjectAccess, modes: dict[str, int]) -> _Context:
        kinds = [RaterKind.LLM]
        if not access.project.imported_labels_count_toward_overlap:
            kinds.append(RaterKind.IMPORTED)
        raters = list(Rater.objects.filter(kind__in=kinds).values_list("user_id", "kind"))
        llm = [user for user, kind in raters if kind == RaterKind.LLM]
        return cls(access, modes, llm, [user for user, _ in raters])

    @property
    def project(self):
        return self.access.project

    def slots(self) -> QuerySet[Assignment]:
        """The overlap's slots, as the project page counts them (annotator.raters.fills_overlap_q)."""
        return (
            Assignment.objects.work()
            .filter(project=self.project)
            .exclude(annotator_id__in=self.not_filling_ids)
        )

    def submitted(self, *, filling: bool) -> QuerySet[Annotation]:
        annotations = Annotation.objects.filter(
            assignment__project=self.project,
            assignment__purpose=Assignment.Purpose.WORK,
            status=Annotation.Status.SUBMITTED,
        )
        return (
            annotations.exclude(assignment__annotator_id__in=self.not_filling_ids) if filling else annotations
        )

    def labels(self, code: str) -> QuerySet[LabelApplication]:
        return LabelApplication.objects.filter(
            mode_id=self.modes[code], annotation__in=self.submitted(filling=False).values("pk")
        )


def _state_q(ctx: _Context, state: str) -> Q:
    slots = ctx.slots()
    complete = (
        slots.filter(status=Assignment.Status.SUBMITTED)
        .order_by()
        .values("trace_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=ctx.project.overlap)
        .values("trace_id")
    )
    items = AdjudicationItem.objects.filter(project=ctx.project)
    if state == "unassigned":
        # Correlated, so PostgreSQL anti-joins in trace id order: the first page reads a few hundred slots,
        # where `NOT IN` hashed every slot of the project first (70 ms at 100,000 traces).
        return ~Q(Exists(slots.filter(trace_id=OuterRef(TRACE_REF))))
    if state == "in_progress":
        # One grouped pass over the slots (traces with a slot and fewer than `overlap` submitted), not the
        # slots and the complete ones read apart and anti-joined (377 ms at 100,000 traces).
        started = (
            slots.order_by()
            .values("trace_id")
            .annotate(n=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED)))
            .filter(n__lt=ctx.project.overlap)
            .values("trace_id")
        )
        return Q(pk__in=started)
    if state == "complete":
        return Q(pk__in=complete)
    if state == "in_adjudication":
        return Q(pk__in=items.filter(status=AdjudicationItem.Status.OPEN).values("trace_id"))
    return Q(pk__in=items.filter(status__in=GOLD_STATUSES).values("trace_id"))


def _disputed_q(ctx: _Context, code: str) -> Q:
    """Among the submitted annotations that fill the overlap, one names the mode and another does not. On
    PostgreSQL an index range of the dispute summary (migration annotator 0041, kept by triggers on every
    label write and rater change); elsewhere (SQLite) the label tables, read twice."""
    if _is_postgres():
        # Imported raters' annotations fill the overlap by a project setting: their counts are kept apart.
        chose, lacked = (
            ("d.chose + d.chose_imported", "d.lacked + d.lacked_imported")
            if ctx.project.imported_labels_count_toward_overlap
            else ("d.chose", "d.lacked")
        )
        return Q(
            pk__in=RawSQL(
                "SELECT d.trace_id FROM annotator_searchdispute d WHERE d.project_id = %s AND d.mode_id = %s "
                f"AND {chose} > 0 AND {lacked} > 0",
                [ctx.project.pk, ctx.modes[code]],
            )
        )
    has = ctx.labels(code).filter(annotation__in=ctx.submitted(filling=True).values("pk"))
    lacks = ctx.submitted(filling=True).exclude(
        pk__in=LabelApplication.objects.filter(mode_id=ctx.modes[code]).values("annotation_id")
    )
    return Q(pk__in=has.values("annotation__assignment__trace_id")) & Q(
        pk__in=lacks.values("assignment__trace_id")
    )


def pair_q(ctx: _Context, pair: str, code: str = "") -> Q:
    """Traces both raters of `pair` ("a,b") submitted; with `code`, those where one of the two chose that
    mode and the other did not: a cell of the agreement report's pair tables (`raters_q` of two)."""
    return raters_q(ctx, rater_names(pair), code, param="pair")


def raters_q(ctx: _Context, names: tuple[str, ...], code: str = "", *, param: str = "raters") -> Q:
    """Traces at least two of `names` submitted (their work annotations, whatever kind of rater); with
    `code`, those where one of them chose that mode and another rated it without choosing it: what the
    agreement report counts as a disagreement on the mode among these raters, so its "Disagree" cell and
    the list it opens hold the same traces. A vote an imported source left out (the annotation's
    provenance `missing_modes`) is neither, as the report has it missing. FilterError names an unknown
    rater."""
    users = dict(get_user_model().objects.filter(username__in=names).values_list("username", "pk"))
    for name in names:
        if name not in users:
            raise FilterError(param, f"no rater '{name}'")
    submitted = ctx.submitted(filling=False).filter(assignment__annotator_id__in=list(users.values()))
    if not code:
        shared = (
            submitted.order_by()
            .values("assignment__trace_id")
            .annotate(n=Count("assignment__annotator_id", distinct=True))
            .filter(n__gte=2)
            .values("assignment__trace_id")
        )
        return Q(pk__in=shared)
    # A subquery, not `exclude(<json lookup>)`: on an annotation without the key the lookup is NULL, and
    # NOT NULL would drop the annotation rather than keep it.
    rated = submitted.exclude(pk__in=submitted.filter(_missing_vote_q(code)).values("pk"))
    chose = LabelApplication.objects.filter(mode_id=ctx.modes[code], annotation__in=rated.values("pk"))
    lacked = rated.exclude(pk__in=chose.values("annotation_id"))
    return Q(pk__in=chose.values("annotation__assignment__trace_id")) & Q(
        pk__in=lacked.values("assignment__trace_id")
    )


def _missing_vote_q(code: str) -> Q:
    """Annotations whose provenance lists `code` among the votes the imported source left out."""
    if _is_postgres():
        return Q(provenance__missing_modes__contains=[code])
    # SQLite's JSON has no containment lookup: the list's elements, by json_each.
    return Q(
        pk__in=RawSQL(
            "SELECT a.id FROM annotator_annotation a, json_each(a.provenance, '$.missing_modes') m "
            "WHERE json_type(a.provenance, '$.missing_modes') = 'array' AND m.value = %s",
            [code],
        )
    )


def _evidence_sql(flt: TraceFilter, project_id: int) -> RawSQL:
    """Trace ids with a submitted label whose evidence names a step of the kind / tool asked for. On
    PostgreSQL a lookup in the evidence summary; elsewhere (SQLite) a join through each label's evidence
    list (a JSON list of {"step": n, ...}) to the step it names, by its whole key (trace, index)."""
    if _is_postgres():
        return _evidence_summary_sql(flt, project_id)
    conditions, params = ["s.project_id = %s", "s.purpose = 'work'", "an.status = 'submitted'"], [project_id]
    step_conditions, step_params = [], []
    if flt.evidence_kind:
        step_conditions.append("st.kind = %s")
        step_params.append(flt.evidence_kind)
    if flt.evidence_tool:
        step_conditions.append("st.tool_name = %s")
        step_params.append(flt.evidence_tool)
    step = (
        'st.trace_id = s.trace_id AND st."index" = '
        "(CASE WHEN ev.type = 'object' THEN json_extract(ev.value, '$.step') END)"
    )
    conditions.append(f"EXISTS (SELECT 1 FROM traces_step st WHERE {' AND '.join([step, *step_conditions])})")
    params.extend(step_params)
    return RawSQL(
        "SELECT s.trace_id FROM annotator_labelapplication la "
        "JOIN annotator_annotation an ON an.id = la.annotation_id "
        "JOIN annotator_assignment s ON s.id = an.assignment_id, "
        "json_each(CASE WHEN json_type(la.evidence) = 'array' THEN la.evidence ELSE '[]' END) ev "
        "WHERE " + " AND ".join(conditions),
        params,
    )


def _evidence_summary_sql(flt: TraceFilter, project_id: int) -> RawSQL:
    """PostgreSQL: an index lookup in the evidence summary (migration annotator 0035, kept by triggers on
    every label write), one row per (project, trace, kind, tool) a submitted work label points at; the
    label tables' join took 3.8-6.4 s at 100,000 traces (docs/benchmarks.md)."""
    conditions, params = ["e.project_id = %s"], [project_id]
    if flt.evidence_kind:
        conditions.append("e.kind = %s")
        params.append(flt.evidence_kind)
    if flt.evidence_tool:
        conditions.append("e.tool_name = %s")
        params.append(flt.evidence_tool)
    return RawSQL(
        f"SELECT e.trace_id FROM annotator_searchevidence e WHERE {' AND '.join(conditions)}", params
    )
