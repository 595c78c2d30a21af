"""Benchmark: the project's trace list filtered and searched at 100,000 traces x 20 steps (issue 28).

    python bench/bench_trace_search.py [--traces 100000] [--repeat 3] [--import-traces 2000] [--import-repeat 7]
    BENCH_SEARCH_TRACES=10000 make bench   # a quick run at a tenth of the size

Needs PostgreSQL (bench/_setup.py). The world is written with COPY and one INSERT ... SELECT: N traces
(3 models, 2 systems, 3 benchmarks, scores, metadata), 20 steps each (a tool call every fourth step; a few
words drawn from a vocabulary, so a search term matches a realistic share), two submitted human
annotations per trace with one or two modes and evidence, an LLM rater's labels on a fifth of the traces,
an adjudication item per trace (80% agreed with gold labels, 20% open with a disputed mode), and a tenth of
the traces left unassigned. Then ANALYZE.

Timed, as the server computes it (`trace_list_body`: the filter's queryset, the count of the whole
filtered set, the first page of 50, its serialization and a search's snippets), median of --repeat after
one warm-up: every single filter, a few three-filter combinations (goal < 200 ms each) and full-text
searches (goal < 300 ms). The baseline, measured in the same run: the unfiltered first page with its count
(what the page did before), and for the search the same words found by ILIKE with no index.

The import: `import_traces` of --import-traces native traces x 20 steps, with the search's share of the
import path (the triggers marking the traces pending, the task sent after commit) and without it,
alternating, median of --import-repeat (goal: at most 20% slower with it); the indexing task that follows the
commit is timed on its own row (a worker runs it in the background).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from _search_world import index_world, insert_world
from _setup import goal, setup_django, table

FILTER_BUDGET_MS = 200
SEARCH_BUDGET_MS = 300
IMPORT_BUDGET = 1.20

SINGLE = [
    "batch=after",
    "benchmark=GAIA",
    "model=gpt-4o",
    "system=AG2",
    "outcome=failure",
    "score_min=0.4&score_max=0.6",
    "steps_min=20&steps_max=20",
    "meta=split:test",
    "state=unassigned",
    "state=in_progress",
    "state=complete",
    "state=in_adjudication",
    "state=gold",
    "gold_mode=FM-1.3",
    "human_mode=FM-2.2",
    "llm_mode=FM-1.1",
    "disputed_mode=FM-1.5",
    "evidence_kind=tool_call",
    "evidence_tool=kubectl",
    "tool=kubectl",
    "tool_args=prod",
    "ordering=-score",
]
TRIPLES = [
    "model=gpt-4o&outcome=failure&gold_mode=FM-1.3",
    "benchmark=ITBench&state=in_adjudication&disputed_mode=FM-1.5",
    "system=AG2&tool=kubectl&score_max=0.3",
    "batch=before&meta=split:test&ordering=-score",
]
SEARCHES = [
    "q=rollback",
    "q=kubectl+delete",
    "q=timeout&model=gpt-4o",
    "q=namespace+production&ordering=-score",
]


@contextlib.contextmanager
def _disputed_from_label_tables():
    """`disputed_mode` as it was before the dispute summary (migration annotator 0041): the label tables,
    read twice (the path SQLite still takes)."""
    from annotator.search import labels

    summary = labels._disputed_q

    def label_tables(ctx, code):
        with mock.patch.object(labels, "_is_postgres", lambda: False):
            return summary(ctx, code)

    with mock.patch.object(labels, "_disputed_q", label_tables):
        yield


@contextlib.contextmanager
def _tool_args_upper_cased_per_request():
    """`tool_args` as it was before migration traces 0014: every row's text upper-cased on each request, ORed
    with the pending traces' steps whether any were pending or not."""
    from annotator.search import service

    old_sql = "SELECT ts.trace_id FROM traces_tracesearch ts WHERE UPPER(ts.tool_args) LIKE UPPER(%s)"
    with (
        mock.patch.object(service, "TOOL_ARGS_TRACES", old_sql),
        mock.patch.object(service, "any_pending", lambda: True),
    ):
        yield


BEFORE = [
    ("disputed_mode=FM-1.5", "label tables", _disputed_from_label_tables),
    (
        "benchmark=ITBench&state=in_adjudication&disputed_mode=FM-1.5",
        "label tables",
        _disputed_from_label_tables,
    ),
    ("tool_args=prod", "UPPER per row", _tool_args_upper_cased_per_request),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=int(os.environ.get("BENCH_SEARCH_TRACES", "100000")))
    parser.add_argument("--repeat", type=int, default=3)
    # An import of 2,000 traces takes about half a second: a median of 3 moved the ratio by 0.2 between runs.
    parser.add_argument("--import-repeat", type=int, default=7)
    parser.add_argument(
        "--import-traces", type=int, default=int(os.environ.get("BENCH_SEARCH_IMPORT_TRACES", "2000"))
    )
    args = parser.parse_args()
    setup_django(need_postgres=True)
    started = time.perf_counter()
    project = insert_world(args.traces, seed=28)
    print(f"world: {args.traces:,} traces x 20 steps written in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    indexed = index_world()
    print(f"search table: {indexed:,} traces indexed in {time.perf_counter() - started:.1f} s")
    measure_queries(project, args)
    measure_import(args)
    return 0


def _timed(fn, repeat: int) -> float:
    fn()  # warm-up: plans and caches, as a server that has answered once
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure_queries(project, args) -> None:
    from django.db import connection
    from django.http import QueryDict

    from annotator.access import ProjectAccess
    from annotator.api.traces import trace_list_body
    from annotator.models import Role
    from traces.models import Step, Trace

    access = ProjectAccess(user=None, project=project, roles=frozenset({Role.OWNER}))

    def page(query: str):
        return lambda: trace_list_body(access, QueryDict(query), "/api/projects/bench/traces/")

    baseline = _timed(page(""), args.repeat)
    rows = [("(baseline) unfiltered first page + count", f"{baseline:.1f}", "1.00x", "", "")]
    worst_filter = worst_search = 0.0
    for kind, queries, budget in (
        ("filter", SINGLE, FILTER_BUDGET_MS),
        ("3 filters", TRIPLES, FILTER_BUDGET_MS),
        ("search", SEARCHES, SEARCH_BUDGET_MS),
    ):
        for query in queries:
            ms = _timed(page(query), args.repeat)
            count = page(query)()["count"]
            rows.append(
                (
                    f"{kind}: {query}",
                    f"{ms:.1f}",
                    f"{ms / baseline:.2f}x",
                    f"{count:,}",
                    "ok" if ms < budget else "SLOW",
                )
            )
            if kind == "search":
                worst_search = max(worst_search, ms)
            else:
                worst_filter = max(worst_filter, ms)

    # The paths these filters took before their summaries, in this run: the row to compare with.
    for query, label, path in BEFORE:
        with path():
            ms = _timed(page(query), args.repeat)
            count = page(query)()["count"]
        rows.append((f"(before: {label}) {query}", f"{ms:.1f}", f"{ms / baseline:.2f}x", f"{count:,}", ""))

    # The search's own baseline: the same words by ILIKE over every step, no index.
    def ilike():
        steps = Step.objects.filter(content__icontains="kubectl").filter(content__icontains="delete")
        traces = Trace.objects.in_project(project).filter(pk__in=steps.values("trace_id"))
        return traces.count(), list(traces.order_by("id")[:50])

    scan = _timed(ilike, args.repeat)
    rows.append(
        (
            "(search baseline) ILIKE 'kubectl' and 'delete', no index",
            f"{scan:.1f}",
            f"{scan / baseline:.2f}x",
            "",
            "",
        )
    )
    print(f"\nserver time, median of {args.repeat} (ms), {args.traces:,} traces x 20 steps:")
    print(table(rows, ("query", "ms", "vs baseline", "count", "")))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_relation_size('traces_stepsearch')), "
            "pg_size_pretty(pg_relation_size('traces_stepsearch_vector')), "
            "pg_size_pretty(pg_total_relation_size('traces_traceword')), "
            "pg_size_pretty(pg_total_relation_size('traces_tracesearch')), "
            "pg_size_pretty(pg_total_relation_size('annotator_searchevidence')), "
            "pg_size_pretty(pg_total_relation_size('annotator_searchdispute'))"
        )
        print(
            "step search table / its GIN index / word rows with indexes / tool arguments / evidence summary / "
            "dispute summary: {} / {} / {} / {} / {} / {}".format(*cursor.fetchone())
        )
    size = f"{args.traces:,} traces"
    goal(
        f"slowest filter / 3-filter page + count ({size})",
        f"{worst_filter:.0f} ms",
        f"< {FILTER_BUDGET_MS} ms",
        worst_filter < FILTER_BUDGET_MS,
    )
    goal(
        f"slowest full-text search page + count ({size})",
        f"{worst_search:.0f} ms",
        f"< {SEARCH_BUDGET_MS} ms",
        worst_search < SEARCH_BUDGET_MS,
    )


SEARCH_TRIGGERS = (
    ("step_search_pending", "INSERT"),
    ("step_search_pending_update", "UPDATE"),
)


TOOL_INDEX = "CREATE INDEX traces_step_tool ON traces_step (tool_name, trace_id) WHERE tool_name <> ''"


def _search_triggers(on: bool) -> None:
    """The import path's share of issue 28: the triggers that mark an import's traces pending and the
    partial index of the `tool` filter (traces 0012)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS traces_step_tool")
        if on:
            cursor.execute(TOOL_INDEX)
        for name, event in SEARCH_TRIGGERS:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON traces_step")
            if on:
                cursor.execute(
                    f"CREATE TRIGGER {name} AFTER {event} ON traces_step REFERENCING NEW TABLE AS written "
                    "FOR EACH STATEMENT EXECUTE FUNCTION traces_step_search_pending()"
                )


def measure_import(args) -> None:
    """`import_traces` with the search's part of the import path (the pending triggers and the task sent
    after commit) and without it (triggers dropped), alternating. The indexing task itself is timed on its
    own row: it runs after the import has committed (a worker; inline after the commit when eager)."""
    from unittest import mock

    from _formats import write_format
    from django.core.management import call_command
    from django.db import connection

    from annotator.search.indexing import index_pending

    work = Path(tempfile.mkdtemp(prefix="bench-search-import-"))
    source = write_format("native", work / "traces", n=args.import_traces, steps=20, seed=5)
    times: dict[bool, list[float]] = {True: [], False: []}
    indexing: list[float] = []
    sent: list[bool] = []
    for run in range(args.import_repeat):
        for indexed in (True, False):
            _search_triggers(indexed)
            with mock.patch(
                "annotator.services.imports.schedule_indexing", side_effect=lambda: sent.append(True)
            ):
                started = time.perf_counter()
                call_command("import_traces", str(source), "--batch", f"import-{run}-{indexed}", verbosity=0)
                times[indexed].append(time.perf_counter() - started)
            if indexed:
                started = time.perf_counter()
                index_pending()
                indexing.append(time.perf_counter() - started)
            with connection.cursor() as cursor:  # the next run imports the same file anew
                cursor.execute(
                    "DELETE FROM traces_trace WHERE batch_id IN (SELECT id FROM traces_batch "
                    "WHERE name LIKE 'import-%%')"
                )
                cursor.execute("DELETE FROM traces_batch WHERE name LIKE 'import-%%'")
    _search_triggers(True)
    assert sent, "the import sent no indexing task"
    without, with_index = statistics.median(times[False]), statistics.median(times[True])
    background = statistics.median(indexing)
    ratio = with_index / without
    print(
        f"\nimport_traces of {args.import_traces:,} native traces x 20 steps, median of {args.import_repeat}:"
    )
    print(
        table(
            [
                ("(baseline) without search triggers and tool index", f"{without:.2f}", "1.00x"),
                ("with: import + pending triggers + tool index + task", f"{with_index:.2f}", f"{ratio:.2f}x"),
                ("the indexing task after the commit (background)", f"{background:.2f}", ""),
            ],
            ("import", "s", "ratio"),
        )
    )
    goal(
        "import with full-text search vs without",
        f"{ratio:.2f}x",
        f"<= {IMPORT_BUDGET:.2f}x",
        ratio <= IMPORT_BUDGET,
    )


if __name__ == "__main__":
    sys.exit(main())
