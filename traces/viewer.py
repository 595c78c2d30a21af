"""The step-by-step trace viewer: read-only, paged, searchable, safe with untrusted text.

Functions here take a Trace the caller has already access-checked (the annotation and review pages in
`annotator` do that) and return plain context for the partials in `templates/traces/partials/`. They know
nothing of projects, users or URLs.

Scale: a 10,000-step, 50 MB trace must open at once, so a page is a fixed number of steps read with an
index range on (trace, index); bodies are cut at BODY_LIMIT characters in SQL (Substr), so no query reads
the content of a step outside the page, and the number of queries never depends on the trace's length.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Length, Substr

from traces.models import Step, StepKind, Trace

PAGE_SIZE = 50
# Longer bodies show their first BODY_LIMIT characters and load the rest on demand.
BODY_LIMIT = 20_000
# Bodies longer than this are collapsed behind <details> (showing their first lines) so a page of long
# tool outputs still reads as a list of steps.
COLLAPSE_CHARS = 1_500
COLLAPSE_LINES = 24
HEAD_LINES = 8
PREVIEW_CHARS = 140
MAX_HITS = 1_000
# Steps from this index on are covered by the trigram indexes (migration traces 0009, which must use the
# same bound); the steps before it are read through the (trace, index) index, which is as fast for them.
SEARCH_INDEXED_FROM = 1_000
FACETS_TTL = 24 * 3600
SEARCH_TTL = 10 * 60
MONO_KINDS = frozenset({StepKind.TOOL_CALL, StepKind.TOOL_RESULT, StepKind.OBSERVATION, StepKind.ERROR})
_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.S)
_SPACE = re.compile(r"\s+")
_LIST_FIELDS = (
    "trace",  # with index, the step's key
    "index",
    "parent_index",
    "depth",
    "agent",
    "role",
    "kind",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "timestamp",
    "tokens",
    "duration_ms",
)


def trace_queryset() -> QuerySet[Trace]:
    """How callers should load a trace for the viewer: never the raw original record (it can be huge)."""
    return Trace.objects.select_related("batch").defer("raw")


@dataclass(frozen=True)
class StepFilter:
    agent: str = ""
    kind: str = ""
    q: str = ""

    @classmethod
    def from_params(cls, params) -> StepFilter:
        kind = params.get("kind", "")
        return cls(
            agent=params.get("agent", "")[:200],
            kind=kind if kind in StepKind.values else "",
            q=params.get("q", "").strip()[:200],
        )

    def apply(self, steps: QuerySet[Step]) -> QuerySet[Step]:
        if self.agent:
            steps = steps.filter(agent=self.agent)
        if self.kind:
            steps = steps.filter(kind=self.kind)
        return steps

    def query(self, **extra: Any) -> str:
        """The query string for a link that keeps these filters (empty values left out)."""
        params = {"agent": self.agent, "kind": self.kind, "q": self.q, **extra}
        return urlencode({k: v for k, v in params.items() if v not in ("", None)})

    @property
    def active(self) -> bool:
        return bool(self.agent or self.kind)


@dataclass
class Segment:
    code: bool
    text: str


@dataclass
class StepView:
    index: int
    parent_index: int | None
    depth: int
    agent: str
    role: str
    kind: str
    kind_label: str
    tool_name: str
    tool_args: Any  # the JSON value as stored; traces.render shows it by shape, escaped and bounded
    timestamp: str
    tokens: int | None
    duration_ms: int | None
    length: int
    body: str
    mono: bool
    is_json: bool
    segments: list[Segment]
    preview: str
    truncated: bool
    long: bool
    head: str
    line_count: int
    hit: bool = False
    # Labels pinned on this step, set by the page that composes the viewer (e.g. "FM-1.3 · ana").
    marks: list[str] = field(default_factory=list)

    @property
    def size_label(self) -> str:
        return _size(self.length)

    # The numbers as text, for the templates: they print a step's index a dozen times, and an int goes
    # through number localisation on each (8-10% of a 50-step page, bench_viewer.py).
    @property
    def ref(self) -> str:
        return str(self.index)

    @property
    def parent_ref(self) -> str:
        return str(self.parent_index)

    @property
    def depth_ref(self) -> str:
        return str(self.depth)

    # Grouped as humanize's intcomma groups them in English ("12,345"), without its localisation per call.
    @property
    def tokens_text(self) -> str:
        return f"{self.tokens:,}" if self.tokens is not None else ""

    @property
    def duration_text(self) -> str:
        return f"{self.duration_ms:,}" if self.duration_ms is not None else ""


@dataclass
class StepPage:
    steps: list[StepView]
    number: int
    num_pages: int
    count: int
    filters: StepFilter
    hits: list[int] = field(default_factory=list)
    hit_total: int = 0
    focus: int | None = None
    agents: list[str] = field(default_factory=list)
    kinds: list[tuple[str, str]] = field(default_factory=list)
    step_count: int = 0

    @property
    def start(self) -> int:
        return (self.number - 1) * PAGE_SIZE + 1 if self.count else 0

    @property
    def end(self) -> int:
        return min(self.number * PAGE_SIZE, self.count)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages

    def query(self, number: int) -> str:
        return self.filters.query(page=number)

    @property
    def previous_query(self) -> str:
        return self.query(self.number - 1)

    @property
    def next_query(self) -> str:
        return self.query(self.number + 1)

    @property
    def first_query(self) -> str:
        return self.query(1)

    @property
    def last_query(self) -> str:
        return self.query(self.num_pages)

    @property
    def hits_truncated(self) -> bool:
        return self.hit_total > len(self.hits)

    @property
    def hits_json(self) -> str:
        return json.dumps(self.hits)


def trace_header(trace: Trace, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """Context for `_header.html`: what the run was, how it ended, and its metadata as readable text.
    `metadata`: what the caller's access policy lets this reader see (default: the trace's own metadata,
    which never holds the answer key)."""
    items = []
    for key, value in (trace.metadata if metadata is None else metadata).items():
        text = (
            value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
        )
        items.append((str(key), text[:5_000]))
    return {
        "trace": trace,
        "outcome_class": {"failure": "bad", "success": "good"}.get(trace.outcome, ""),
        "metadata_items": items,
        "task_long": len(trace.task) > 400 or trace.task.count("\n") > 6,
    }


def _steps(trace: Trace, filters: StepFilter) -> QuerySet[Step]:
    return filters.apply(Step.objects.filter(trace_id=trace.pk))


def step_page(
    trace: Trace, filters: StepFilter, *, page: int | str | None = None, step: int | str | None = None
) -> StepPage:
    """One page of steps (PAGE_SIZE, in index order) matching `filters`. `step` picks the page holding that
    step (deep links, search hits) and wins over `page`; a search without either opens at its first hit.

    A constant number of queries at any trace length, and none of them reads more than a page of rows when
    no agent or kind filter is set: a trace's steps are numbered 0..step_count-1 at import, so page N is an
    index range and "the page of step S" is arithmetic; the counts per agent and kind come from the cached
    facets. With an agent or kind filter the page is found with an offset over the (trace, index) index."""
    steps = _steps(trace, filters)
    unfiltered = not (filters.agent or filters.kind)
    agents, kinds, counts = _facets(trace)
    count = trace.step_count if unfiltered else _filtered_count(counts, filters)
    num_pages = max(1, -(-count // PAGE_SIZE))
    hits, hit_total = search_steps(trace, filters)
    focus = _int(step)
    if focus is None and page in (None, "") and hits:
        focus = hits[0]
    number = _int(page) or 1
    if focus is not None:
        before = focus if unfiltered else steps.filter(index__lt=focus).count()
        number = before // PAGE_SIZE + 1
    number = min(max(number, 1), num_pages)
    offset = (number - 1) * PAGE_SIZE
    if unfiltered:
        page_rows = Step.objects.filter(trace_id=trace.pk, index__gte=offset, index__lt=offset + PAGE_SIZE)
    else:
        # The page's indexes first (an offset over the key), then only those rows with their bodies cut in
        # SQL: the database never evaluates SUBSTR/LENGTH (never detoasts content) for a step off the page.
        page_indexes = steps.order_by("index").values("index")[offset : offset + PAGE_SIZE]
        page_rows = Step.objects.filter(trace_id=trace.pk, index__in=page_indexes)
    rows = (
        page_rows.order_by("index")
        .only(*_LIST_FIELDS)
        .annotate(head_text=Substr("content", 1, BODY_LIMIT), content_length=Length("content"))
    )
    hit_set = set(hits)
    views = [
        _view(row, row.head_text or "", row.content_length or 0, hit=row.index in hit_set) for row in rows
    ]
    return StepPage(
        steps=views,
        number=number,
        num_pages=num_pages,
        count=count,
        filters=filters,
        hits=hits,
        hit_total=hit_total,
        focus=focus,
        agents=agents,
        kinds=kinds,
        step_count=trace.step_count,
    )


def facets(trace: Trace) -> tuple[list[str], list[tuple[str, str]]]:
    """The agents and kinds present in the trace, for the filter menus."""
    agents, kinds, _ = _facets(trace)
    return agents, kinds


def _facets(trace: Trace) -> tuple[list[str], list[tuple[str, str]], dict[tuple[str, str], int]]:
    """Agents, kinds and the number of steps per (agent, kind).

    Finding them scans every step of the trace (a GROUP BY over 100,000 rows costs more than the rest of
    the page), and a trace's steps never change after import, so the answer is cached per trace content;
    the counts answer "how many steps match this agent/kind filter" without another scan.
    """
    key = f"trace-facets:v2:{trace.pk}:{trace.content_hash}"
    triples = cache.get(key)
    if triples is None:
        triples = sorted(
            Step.objects.filter(trace_id=trace.pk)
            .order_by()
            .values_list("agent", "kind")
            .annotate(n=Count("index"))
        )
        cache.set(key, triples, timeout=FACETS_TTL)
    counts = {(agent, kind): n for agent, kind, n in triples}
    agents = sorted({agent for agent, _ in counts if agent})
    present = {kind for _, kind in counts}
    kinds = [(value, label) for value, label in StepKind.choices if value in present]
    return agents, kinds, counts


def _filtered_count(counts: dict[tuple[str, str], int], filters: StepFilter) -> int:
    return sum(
        n
        for (agent, kind), n in counts.items()
        if (not filters.agent or agent == filters.agent) and (not filters.kind or kind == filters.kind)
    )


def search_steps(trace: Trace, filters: StepFilter) -> tuple[list[int], int]:
    """Indices of steps (within the filters) whose content, tool name or tool arguments contain `q`
    (case-insensitive); returns (first MAX_HITS hit indices, total hits, counted up to MAX_HITS + 1).

    On PostgreSQL the match is an ILIKE. The first SEARCH_INDEXED_FROM steps of a trace are read in index
    order (a short trace is read whole, in milliseconds); the steps after them, which only long traces have,
    are answered by the partial trigram indexes on those three columns (migration traces 0009), so a rare
    string in a 100,000-step trace is found without reading the trace; a common one stops at MAX_HITS + 1
    hits in index order. Paging and jumping between hits ask again, so results are
    cached per trace content and filters for a while (steps never change).
    """
    if not filters.q:
        return [], 0
    digest = hashlib.sha256(f"{filters.agent}\0{filters.kind}\0{filters.q}".encode()).hexdigest()[:32]
    key = f"trace-search:v2:{trace.pk}:{trace.content_hash}:{digest}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    steps = _steps(trace, filters)
    hits = _first_hits(steps.filter(index__lt=SEARCH_INDEXED_FROM), filters.q, MAX_HITS + 1)
    if len(hits) <= MAX_HITS and trace.step_count > SEARCH_INDEXED_FROM:
        hits += _first_hits(steps.filter(index__gte=SEARCH_INDEXED_FROM), filters.q, MAX_HITS + 1 - len(hits))
    result = (hits[:MAX_HITS], len(hits))
    cache.set(key, result, timeout=SEARCH_TTL)
    return result


def _first_hits(steps: QuerySet[Step], q: str, limit: int) -> list[int]:
    return list(_matching(steps, q).order_by("index").values_list("index", flat=True)[:limit])


def _matching(steps: QuerySet[Step], q: str) -> QuerySet[Step]:
    if connection.vendor == "postgresql":
        pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return steps.extra(
            where=[
                '("traces_step"."content" ILIKE %s OR "traces_step"."tool_name" ILIKE %s'
                ' OR ("traces_step"."tool_args")::text ILIKE %s)'
            ],
            params=[pattern, pattern, pattern],
        )
    return steps.filter(Q(content__icontains=q) | Q(tool_name__icontains=q) | Q(tool_args__icontains=q))


def full_step(trace: Trace, index: int, filters: StepFilter | None = None) -> StepView | None:
    """One step with its whole content (the "load the rest" of a step longer than BODY_LIMIT)."""
    row = Step.objects.filter(trace_id=trace.pk, index=index).first()
    if row is None:
        return None
    q = (filters or StepFilter()).q
    hit = bool(q) and q.lower() in (row.content + row.tool_name + json.dumps(row.tool_args or "")).lower()
    return _view(row, row.content, len(row.content), hit=hit)


def _view(row: Step, text: str, length: int, *, hit: bool) -> StepView:
    kind = row.kind
    pretty = _pretty_json(text) if length == len(text) else None
    body = pretty if pretty is not None else text
    lines = body.count("\n") + 1
    long = len(body) > COLLAPSE_CHARS or lines > COLLAPSE_LINES
    mono = pretty is not None or kind in MONO_KINDS
    return StepView(
        index=row.index,
        parent_index=row.parent_index,
        depth=min(row.depth or 0, 8),
        agent=row.agent,
        role=row.role,
        kind=kind,
        kind_label=StepKind(kind).label if kind in StepKind.values else kind,
        tool_name=row.tool_name,
        tool_args=row.tool_args,
        timestamp=row.timestamp,
        tokens=row.tokens,
        duration_ms=row.duration_ms,
        length=length,
        body=body,
        mono=mono,
        is_json=pretty is not None,
        segments=[] if mono else _segments(body),
        preview=_preview(text, row.tool_name),
        truncated=length > len(text),
        long=long,
        head="\n".join(body.splitlines()[:HEAD_LINES])[:COLLAPSE_CHARS] if long else "",
        line_count=lines,
        hit=hit,
    )


def _pretty_json(text: str) -> str | None:
    """Indented JSON when the whole body is a JSON object or array, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return None
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _segments(text: str) -> list[Segment]:
    """Split prose on ``` fences so code inside a message renders monospace."""
    parts: list[Segment] = []
    last = 0
    for match in _FENCE.finditer(text):
        if match.start() > last:
            parts.append(Segment(False, text[last : match.start()]))
        parts.append(Segment(True, match.group(1)))
        last = match.end()
    if last < len(text):
        parts.append(Segment(False, text[last:]))
    return parts or [Segment(False, "")]


def _preview(text: str, tool_name: str) -> str:
    for line in text[:2_000].splitlines():
        line = _SPACE.sub(" ", line).strip()
        if line:
            return line[:PREVIEW_CHARS] + ("…" if len(line) > PREVIEW_CHARS else "")
    return f"({tool_name})" if tool_name else "(empty)"


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number <= 2**31 - 1 else None  # beyond a 32-bit column: no such step or page


def _size(length: int) -> str:
    if length < 1_000:
        return f"{length} chars"
    if length < 1_000_000:
        return f"{length / 1_000:.1f} K chars"
    return f"{length / 1_000_000:.1f} M chars"
