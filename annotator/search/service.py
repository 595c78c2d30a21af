"""The ORM bridge of the filter language: a `TraceFilter` compiled to a queryset of one project's traces, as
one user may see them (annotator.access), and the matching steps of a page of search results.

Full-text search of step content: on PostgreSQL `vector @@ plainto_tsquery('simple', ...)` over the search
table of migration traces 0012 (GIN-indexed, filled after each import by annotator.search.indexing), plus a
plain scan of the steps of the traces not indexed yet (traces_searchpending: an import whose indexing task
has not run), so a trace is found the moment its import commits. Ranked by `ts_rank` (the best step of a
trace ranks the trace); words match whole ('simple' config: no stemming, no stop words). A one-word search
reads the word rows per trace of migration traces 0013 instead (same results, same order). On SQLite (the
embedded demo) every word must occur in one step as a substring (LIKE), and a trace ranks by how many of
its steps match: fine at demo scale, no index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Count,
    F,
    FloatField,
    Func,
    Q,
    QuerySet,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTransform

from annotator.access import ALL_TRACES_ROLES, ProjectAccess
from annotator.models import ProjectTrace
from annotator.search.filters import FilterError, TraceFilter, snippet
from annotator.search.fulltext import (
    MATCHING_STEPS,
    PENDING_MATCHING_TRACES,
    PENDING_TOOL_ARGS,
    TOOL_ARGS_TRACES,
    WORD_IN_RANK_ORDER,
    WORD_TRACES,
    any_pending,
    one_word,
    ranked_matches,
)
from annotator.search.indexing import uses_search_table
from annotator.search.labels import TRACE_REF, label_conditions
from taxonomy.models import FailureMode
from traces.models import Step, Trace

MATCHES_PER_TRACE = 3
WALK_CHUNK, WALK_ROWS = 500, 4000  # a one-word page walks at most this many of the word's rows
_ORDER_FIELDS = {
    "external_id": "external_id",
    "model": "model",
    "outcome": "outcome",
    "score": "score",
    "steps": "step_count",
    "batch": "batch__name",
    "created": "created_at",
}


class _TsExpression(Func):
    """`to_tsvector('simple', column)` against `plainto_tsquery('simple', text)`: the very expression of
    the search table of migration traces 0012 stores; used on the steps of one page of results (PostgreSQL only)."""

    pattern = ""

    def as_sql(self, compiler, connection, **extra):
        column, column_params = compiler.compile(self.source_expressions[0])
        text, text_params = compiler.compile(self.source_expressions[1])
        vector, query = f"to_tsvector('simple', {column})", f"plainto_tsquery('simple', {text})"
        return self.pattern.format(vector=vector, query=query), [*column_params, *text_params]


class TsMatch(_TsExpression):
    pattern = "{vector} @@ {query}"
    output_field = BooleanField()


class TsRank(_TsExpression):
    pattern = "ts_rank({vector}, {query})"
    output_field = FloatField()


@dataclass
class StepMatch:
    index: int
    kind: str
    segments: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def snippet(self) -> str:
        return "".join(text for text, _ in self.segments)


def _is_postgres() -> bool:
    return uses_search_table()


def check_blind(access: ProjectAccess, flt: TraceFilter, scope: QuerySet[Trace]) -> None:
    """Refuse filters on other raters' labels, the gold or the adjudication state (403) to annotators and
    viewers, and to an owner or adjudicator still blind on a trace in `scope` (what the filter would reveal
    something about): blind beats every role (annotator.access)."""
    if not flt.reveals_labels:
        return
    names = ", ".join(flt.label_params)
    if not access.is_reviewer:
        raise PermissionDenied(
            f"{names}: filters on other raters' labels, the gold or the adjudication state are for owners "
            "and adjudicators (blind labelling). You may search content and filter by trace data."
        )
    blind = scope.filter(pk__in=access.blind_trace_ids()).count() if access.blind_count else 0
    if blind:
        raise PermissionDenied(
            f"{names}: you still have {blind} trace(s) to annotate among the traces this filter looks at; "
            "filters on other raters' labels open once you have submitted them (blind labelling)."
        )


def _known_modes(access: ProjectAccess, flt: TraceFilter) -> dict[str, int]:
    wanted = {
        name: getattr(flt, name)
        for name in ("gold_mode", "human_mode", "llm_mode", "disputed_mode")
        if getattr(flt, name)
    }
    if not wanted:
        return {}
    known = dict(
        FailureMode.objects.filter(
            version_id=access.project.taxonomy_version_id, code__in=wanted.values()
        ).values_list("code", "pk")
    )
    for name, code in wanted.items():
        if code not in known:
            raise FilterError(name, f"no failure mode '{code}' in this project's taxonomy")
    return known


def _batch_q(value: str) -> Q:
    return Q(batch_id=int(value)) | Q(batch__name=value) if value.isdigit() else Q(batch__name=value)


def _column_filtered(access: ProjectAccess, flt: TraceFilter) -> QuerySet[Trace]:
    """The filters on the traces' own columns: open to every member on the traces they may open."""
    traces = access.traces()
    for name in ("benchmark", "model", "system", "outcome"):
        if getattr(flt, name):
            traces = traces.filter(**{name: getattr(flt, name)})
    if flt.batch:
        traces = traces.filter(_batch_q(flt.batch))
    if flt.score_min is not None:
        traces = traces.filter(score__gte=flt.score_min)
    if flt.score_max is not None:
        traces = traces.filter(score__lte=flt.score_max)
    if flt.steps_min is not None:
        traces = traces.filter(step_count__gte=flt.steps_min)
    if flt.steps_max is not None:
        traces = traces.filter(step_count__lte=flt.steps_max)
    for number, (key, value) in enumerate(flt.meta):
        alias = f"meta_{number}"
        traces = traces.alias(**{alias: KeyTransform(key, "metadata")}).filter(_meta_q(alias, value))
    return traces


def _tool_conditions(flt: TraceFilter) -> list[Q]:
    """The `tool` and `tool_args` filters, as conditions on the trace id (open to every member)."""
    if flt.tool_args and not flt.tool and _is_postgres() and "\n" not in flt.tool_args:
        pattern = f"%{connection.ops.prep_for_like_query(flt.tool_args)}%"
        matching = Q(pk__in=RawSQL(TOOL_ARGS_TRACES, [pattern]))
        if any_pending():
            matching |= Q(pk__in=RawSQL(PENDING_TOOL_ARGS, [pattern]))
        # Alone (nothing pending, the usual case), the subquery is a semi-join the planner may walk in id
        # order: the first page of a pattern nearly every trace matches reads 50 rows, not all of them.
        return [matching]
    if flt.tool or flt.tool_args:
        steps = Step.objects.all()
        if flt.tool:
            steps = steps.filter(tool_name=flt.tool)
        if flt.tool_args:
            steps = steps.filter(tool_args__icontains=flt.tool_args)
        return [Q(pk__in=steps.values("trace_id"))]
    return []


def _search_conditions(flt: TraceFilter) -> list[Q]:
    """The traces with a step matching the search, as a condition on the trace id (applied last: a ranked
    list ranks the matching steps of the traces the other filters leave, without it, see RankedTraces)."""
    if not flt.q:
        return []
    if not _is_postgres():
        return [Q(pk__in=_matching_steps(flt).values("trace_id"))]
    word = one_word(flt.q)
    if word:
        indexed = Q(pk__in=RawSQL(WORD_TRACES, [word]))
        if not any_pending():
            return [indexed]  # a plain semi-join: the count walks the word's rows with the membership's
        # Two id sets, ORed: each an uncorrelated subquery PostgreSQL hashes once. Their union in one `IN`
        # had no row estimate to plan with (a nested loop per matching trace: 3 s at 100,000 traces).
        return [indexed | Q(pk__in=RawSQL(PENDING_MATCHING_TRACES, [flt.q]))]
    return [Q(pk__in=RawSQL(f"SELECT m.trace_id FROM ({MATCHING_STEPS}) m", [flt.q, flt.q]))]


def _meta_q(alias: str, value: str) -> Q:
    """The metadata value as text, or as the JSON number / true / false it spells (`n_agents:3`)."""
    match = Q(**{alias: value})
    if value in ("true", "false"):
        return match | Q(**{alias: value == "true"})
    try:
        number = float(value)
    except ValueError:
        return match
    if math.isfinite(number):
        match |= Q(**{alias: int(number) if number.is_integer() else number})
    return match


def _matching_steps(flt: TraceFilter, steps: QuerySet[Step] | None = None) -> QuerySet[Step]:
    steps = Step.objects.all() if steps is None else steps
    if _is_postgres():
        return steps.filter(TsMatch(F("content"), Value(flt.q)))
    for term in flt.terms:
        steps = steps.filter(content__icontains=term)
    return steps


def filtered_traces(access: ProjectAccess, flt: TraceFilter) -> QuerySet[Trace] | RankedTraces:
    """The traces matching `flt` that this member may open, in the filter's order (id breaks ties).

    Raises FilterError (an unknown mode code: 400 naming the parameter) and PermissionDenied (a filter on
    labels from someone who may not see them: 403 saying why)."""
    if flt.like is not None:
        # `like` ranks what the other filters leave (annotator.similar.ranking, which subclasses RankedTraces
        # and so imports this module: imported here).
        from annotator.similar.ranking import similar_traces, without_like

        return similar_traces(access, flt, filtered_traces(access, without_like(flt)))
    modes = _known_modes(access, flt)
    columns = _column_filtered(access, flt).alias(**{TRACE_REF: F("pk")})
    tools, search = _tool_conditions(flt), _search_conditions(flt)
    check_blind(access, flt, columns.filter(*tools, *search))
    labels = label_conditions(access, flt, modes)
    traces = columns.filter(*tools, *labels, *search)
    if access.holds(ALL_TRACES_ROLES) and not flt.on_trace_columns:
        project, conditions = access.project, [*tools, *labels, *search]
        traces = traces.counted_by(lambda: _membership_count(project, conditions))
    return _ordered(traces, columns.filter(*tools, *labels), flt)


def _membership_count(project, conditions: list[Q]) -> int:
    """How many of the project's traces meet `conditions` (each on the trace id), counted on its membership
    rows alone: no trace row is read. On PostgreSQL by merge joins of index-only scans (the membership's key
    and the summaries' indexes are all in trace id order); the planner's hash joins, which build a table of
    every matching id first, took 2-4 times as long at 100,000 traces (bench_trace_search)."""
    rows = (
        ProjectTrace.objects.filter(project=project)
        .alias(**{TRACE_REF: F("trace_id")})
        .filter(*(_on_membership(c) for c in conditions))
    )
    if not conditions or not _is_postgres():
        return rows.count()
    with transaction.atomic(), connection.cursor() as cursor:
        # Local to the transaction and put back after (an error rolls it back with the savepoint): a
        # caller's own transaction plans its other queries as it would.
        cursor.execute(
            "SELECT current_setting('enable_hashjoin'), set_config('enable_hashjoin', 'off', true)"
        )
        previous = cursor.fetchone()[0]
        count = rows.count()
        cursor.execute("SELECT set_config('enable_hashjoin', %s, true)", [previous])
        return count


def _on_membership(condition: Q) -> Q:
    """A condition on a trace's id (`pk__...`) as one on a membership row's trace id (a correlated subquery
    names it by TRACE_REF, which both sides alias)."""
    moved = Q(_connector=condition.connector, _negated=condition.negated)
    for child in condition.children:
        if isinstance(child, Q):
            moved.children.append(_on_membership(child))
        elif not isinstance(child, tuple):
            moved.children.append(child)
        else:
            key, value = child
            if not key.startswith("pk__"):
                raise ValueError(f"not a condition on the trace id: {key}")
            moved.children.append((f"trace_id__{key[4:]}", value))
    return moved


def _ordered(
    traces: QuerySet[Trace], unsearched: QuerySet[Trace], flt: TraceFilter
) -> QuerySet[Trace] | RankedTraces:
    """The list in the filter's order: `unsearched` is every filter but the search (a ranking's scope)."""
    column, descending = flt.order_key
    if not column:
        return traces.order_by("id")
    if column == "rank":
        return RankedTraces(traces, flt, descending, scope=unsearched)
    expression = F(_ORDER_FIELDS[column])
    expression = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
    return traces.order_by(expression, "id")


class RankedTraces:
    """Search results in rank order, for a paginator (count and slices). The ranks come from one grouped
    query over the matching steps (the search table's GIN index finds them), not from a subquery per trace: a rank per
    trace correlated with the trace list re-ran the index scan for every row (seconds at 20,000 traces).
    `only`, `defer` and `select_related` shape the trace rows, as on the queryset it wraps."""

    def __init__(
        self,
        traces: QuerySet[Trace],
        flt: TraceFilter,
        descending: bool = True,
        *,
        scope: QuerySet[Trace] | None = None,
    ) -> None:
        self.traces = traces
        self.flt = flt
        self.descending = descending
        # The traces the other filters leave: the ranking's own pass over the matching steps narrows them
        # to the matching ones, so it need not run the search a second time as `traces` does.
        self.scope = traces if scope is None else scope

    def _shaped(self, method: str, *args) -> RankedTraces:
        traces, scope = getattr(self.traces, method)(*args), getattr(self.scope, method)(*args)
        return RankedTraces(traces, self.flt, self.descending, scope=scope)

    def only(self, *fields: str) -> RankedTraces:
        return self._shaped("only", *fields)

    def defer(self, *fields: str) -> RankedTraces:
        return self._shaped("defer", *fields)

    def select_related(self, *fields: str) -> RankedTraces:
        return self._shaped("select_related", *fields)

    def count(self) -> int:
        return self.traces.count()

    def __len__(self) -> int:
        return self.count()

    def ranked_ids(self, window: slice) -> list[int]:
        """The matching traces' ids in `window` of the list, best first (id breaks ties)."""
        if _is_postgres():
            return self._ranked_ids_postgres(window)
        steps = _matching_steps(
            self.flt, Step.objects.filter(trace_id__in=self.traces.order_by().values("pk"))
        )
        # SQLite: a trace ranks by how many of its steps match.
        return list(
            steps.order_by()
            .values("trace_id")
            .annotate(search_rank=Count("index"))
            .order_by("-search_rank" if self.descending else "search_rank", "trace_id")
            .values_list("trace_id", flat=True)[window]
        )

    def _ranked_ids_postgres(self, window: slice) -> list[int]:
        walked = self._walked_word_ids(window)
        if walked is not None:
            return walked
        traces_sql, traces_params = self.scope.order_by().values("pk").query.sql_with_params()
        start = window.start or 0
        limit = "ALL" if window.stop is None else str(max(window.stop - start, 0))
        direction = "DESC" if self.descending else "ASC"
        matching, matching_params, per_step = ranked_matches(self.flt.q)
        group, rank = ("GROUP BY m.trace_id ", "max(m.rank)") if per_step else ("", "m.rank")
        sql = (
            f"SELECT m.trace_id FROM ({matching}) m WHERE m.trace_id IN ({traces_sql}) "
            f"{group}ORDER BY {rank} {direction}, m.trace_id LIMIT {limit} OFFSET %s"
        )
        with transaction.atomic(), connection.cursor() as cursor:
            # JIT compiled this plan for a common word (a cost that grows with the matching steps) and took
            # 130 ms of 900 at 100,000 traces (bench_trace_search); the query itself is simple.
            cursor.execute("SET LOCAL jit = off")
            cursor.execute(sql, [*matching_params, *traces_params, start])
            return [row[0] for row in cursor.fetchall()]

    def _walked_word_ids(self, window: slice) -> list[int] | None:
        """A page of a one-word search, best first, by walking the word's rows in rank order (their index)
        and keeping those in scope until the page is full: a few hundred rows instead of ranking every
        match against the whole scope. None (rank it all in SQL) for an ascending rank, an open window,
        traces still pending indexing, or a scope that keeps too few of the rows walked."""
        word = one_word(self.flt.q)
        if not word or not self.descending or window.stop is None:
            return None
        start, stop = window.start or 0, window.stop
        if stop - start <= 0:
            return []
        scope = self.scope.order_by()
        if any_pending():
            return None
        with connection.cursor() as cursor:
            kept: list[int] = []
            for offset in range(0, WALK_ROWS, WALK_CHUNK):
                cursor.execute(WORD_IN_RANK_ORDER, [word, WALK_CHUNK, offset])
                chunk = [row[0] for row in cursor.fetchall()]
                inside = set(scope.filter(pk__in=chunk).values_list("pk", flat=True))
                kept.extend(pk for pk in chunk if pk in inside)
                if len(kept) >= stop or len(chunk) < WALK_CHUNK:
                    return kept[start:stop]
        return None

    def __getitem__(self, window: slice) -> list[Trace]:
        ids = self.ranked_ids(window)
        # The ids match the search by construction: read them from the scope, not the searched list.
        rows = self.scope.order_by().in_bulk(ids)
        return [rows[pk] for pk in ids if pk in rows]


def step_matches(flt: TraceFilter, trace_ids: list[int]) -> dict[int, list[StepMatch]]:
    """The best few matching steps of each trace on a page of results, with a snippet each."""
    if not flt.q or not trace_ids:
        return {}
    steps = _matching_steps(flt, Step.objects.filter(trace_id__in=trace_ids)).only(
        "trace_id", "index", "kind", "content"
    )
    if _is_postgres():
        steps = steps.annotate(step_rank=TsRank(F("content"), Value(flt.q))).order_by(
            "trace_id", "-step_rank", "index"
        )
    else:
        steps = steps.order_by("trace_id", "index")
    found: dict[int, list[StepMatch]] = {}
    for step in steps[: len(trace_ids) * 50]:
        mine = found.setdefault(step.trace_id, [])
        if len(mine) < MATCHES_PER_TRACE:
            mine.append(StepMatch(step.index, step.kind, snippet(step.content, flt.terms)))
    return found
