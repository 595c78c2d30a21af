"""The full-text search table, filled after the import (PostgreSQL only; see migration traces 0012).

An import's steps land in traces_step and their traces in traces_searchpending (a statement trigger); the
task `annotator.search.index_pending`, sent after the import commits and by the periodic reconciliation,
calls `index_pending`. Until it has run, the search scans the steps of the pending traces
(annotator.search.service), so a search never misses a trace that is still waiting.
"""

from __future__ import annotations

from django.db import connection, transaction

from annotator.services.enqueue import enqueue

INDEX_TASK = "annotator.search.index_pending"
CHUNK_TRACES = 500  # about 10,000 steps a transaction: short locks, bounded memory

# Claimed with SKIP LOCKED, so two workers (an import's task and the reconciliation's) share the work
# instead of waiting on each other; the claim and the rows it writes commit together, so a worker that
# dies leaves its chunk pending for the next task.
_CLAIM = """
    DELETE FROM traces_searchpending WHERE trace_id IN (
        SELECT trace_id FROM traces_searchpending ORDER BY trace_id LIMIT %s FOR UPDATE SKIP LOCKED
    ) RETURNING trace_id
"""
# Delete first: a trace whose steps were written again is indexed anew, not twice.
_CLEAR = "DELETE FROM traces_stepsearch WHERE trace_id = ANY(%s)"
_CLEAR_WORDS = "DELETE FROM traces_traceword WHERE trace_id = ANY(%s)"
_CLEAR_TOOL_ARGS = "DELETE FROM traces_tracesearch WHERE trace_id = ANY(%s)"
_FILL = """
    INSERT INTO traces_stepsearch (trace_id, "index", vector)
    SELECT trace_id, "index", to_tsvector('simple', content) FROM traces_step WHERE trace_id = ANY(%s)
"""
# Then the rows per trace (migration traces 0013) from the step rows just written: each word once with the
# most times one step has it (a one-word search counts and ranks on these), and the tool arguments as JSON
# text, one step's per line.
_FILL_WORDS = """
    INSERT INTO traces_traceword (lexeme, trace_id, n)
    SELECT u.lexeme, ss.trace_id, max(cardinality(u.positions))
    FROM traces_stepsearch ss CROSS JOIN LATERAL unnest(ss.vector) u
    WHERE ss.trace_id = ANY(%s)
    GROUP BY ss.trace_id, u.lexeme
"""
_FILL_TOOL_ARGS = r"""
    INSERT INTO traces_tracesearch (trace_id, tool_args)
    SELECT trace_id, string_agg(tool_args::text, E'\n' ORDER BY "index")
    FROM traces_step WHERE trace_id = ANY(%s) AND tool_args IS NOT NULL
    GROUP BY trace_id
"""


def uses_search_table() -> bool:
    return connection.vendor == "postgresql"


def index_pending(chunk: int = CHUNK_TRACES) -> int:
    """Index every pending trace, a chunk per transaction; returns how many traces were indexed.
    Idempotent: nothing pending, nothing done."""
    if not uses_search_table():
        return 0
    done = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_CLAIM, [chunk])
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return done
            cursor.execute(_CLEAR, [ids])
            cursor.execute(_FILL, [ids])
            cursor.execute(_CLEAR_WORDS, [ids])
            cursor.execute(_FILL_WORDS, [ids])
            cursor.execute(_CLEAR_TOOL_ARGS, [ids])
            cursor.execute(_FILL_TOOL_ARGS, [ids])
        done += len(ids)


def pending_count() -> int:
    """Traces whose steps are not in the search table yet (0 on SQLite, which has no table)."""
    if not uses_search_table():
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM traces_searchpending")
        return cursor.fetchone()[0]


def schedule_indexing(*, after_commit: bool = True) -> None:
    """Send the indexing task (after the caller's transaction commits: the worker must see the steps).
    A broker that is down only delays it: the reconciliation sends it again while traces are pending."""
    if uses_search_table():
        enqueue(INDEX_TASK, after_commit=after_commit)
