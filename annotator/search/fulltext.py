"""The PostgreSQL text of the trace search's queries (annotator.search.service), over the search tables of
migrations traces 0012 (a row per step) and 0013 (a row per trace and word; a trace's tool arguments), and
the steps of the traces still pending indexing (annotator.search.indexing)."""

from __future__ import annotations

import functools

from django.db import connection


@functools.lru_cache(maxsize=512)
def one_word(q: str) -> str | None:
    """The word a one-word search looks for, as the index stores it (PostgreSQL's parser and the 'simple'
    dictionary decide, as for the search itself); None for several words, which must occur in one step."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT CASE WHEN numnode(plainto_tsquery('simple', %s)) = 1 "
            "THEN ARRAY(SELECT lexeme FROM unnest(to_tsvector('simple', %s))) END",
            [q, q],
        )
        words = cursor.fetchone()[0]
    return words[0] if words and len(words) == 1 else None


def any_pending() -> bool:
    """Whether some trace's steps are not indexed yet (an import whose indexing task has not run)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM traces_searchpending)")
        return cursor.fetchone()[0]


def ranked_matches(q: str) -> tuple[str, list, bool]:
    """The SQL of the traces matching `q` with a rank each (trace_id, rank), its parameters, and whether a
    trace has several rows (the best counts): one a trace for one word (the word's rows), one a matching
    step for several."""
    word = one_word(q)
    if word:
        return RANKED_WORD, [word, word, q], False
    return MATCHING_STEPS, [q, q], True


# The steps matching a search on PostgreSQL, with their rank: the search table's (its GIN index finds them)
# and those of the traces still pending indexing, by a scan of their steps only (their primary key's
# prefix). A trace is in one part or the other: indexing claims it from the pending table and writes its
# rows in one transaction. The two %s are the same search text.
MATCHING_STEPS = """
    SELECT ss.trace_id, ts_rank(ss.vector, q.q) AS rank
    FROM traces_stepsearch ss, plainto_tsquery('simple', %s) q(q) WHERE ss.vector @@ q.q
    UNION ALL
    SELECT st.trace_id, ts_rank(to_tsvector('simple', st.content), q.q)
    FROM traces_searchpending p JOIN traces_step st ON st.trace_id = p.trace_id,
         plainto_tsquery('simple', %s) q(q)
    WHERE to_tsvector('simple', st.content) @@ q.q
"""
# A one-word search: the word's rows of traces_traceword (migration traces 0013; an index-only range),
# ranked by `n`, the most times one step of the trace has the word (ts_rank without normalisation grows with
# it, so this is the best step's order), and the traces still pending, by their steps. A trace is in one
# part only: one whose steps were written again after its indexing is read from its steps until the task
# has run again. Parameters: the word (ids); the word twice and the search text (ranked).
_NOT_PENDING = "NOT EXISTS (SELECT 1 FROM traces_searchpending p WHERE p.trace_id = w.trace_id)"
WORD_TRACES = f"SELECT w.trace_id FROM traces_traceword w WHERE w.lexeme = %s AND {_NOT_PENDING}"
PENDING_MATCHING_TRACES = """
    SELECT p.trace_id FROM traces_searchpending p WHERE EXISTS (
        SELECT 1 FROM traces_step st, plainto_tsquery('simple', %s) q(q)
        WHERE st.trace_id = p.trace_id AND to_tsvector('simple', st.content) @@ q.q)
"""
# The word's rows best first, a chunk at a time (the index's order: lexeme, n DESC, trace_id).
WORD_IN_RANK_ORDER = "SELECT w.trace_id FROM traces_traceword w WHERE w.lexeme = %s ORDER BY w.n DESC, w.trace_id LIMIT %s OFFSET %s"
RANKED_WORD = f"""
    SELECT w.trace_id, w.n AS rank FROM traces_traceword w WHERE w.lexeme = %s AND {_NOT_PENDING}
    UNION ALL
    SELECT st.trace_id,
           max((SELECT cardinality(u.positions) FROM unnest(to_tsvector('simple', st.content)) u
                WHERE u.lexeme = %s))
    FROM traces_searchpending p JOIN traces_step st ON st.trace_id = p.trace_id,
         plainto_tsquery('simple', %s) q(q)
    WHERE to_tsvector('simple', st.content) @@ q.q
    GROUP BY st.trace_id
"""
# The `tool_args` filter on PostgreSQL: the traces' tool arguments (traces_tracesearch, migration traces
# 0013; one step's per line, so a text without a newline matches within one step's), and the steps of the
# traces still pending, ORed in while any is (annotator.search.service). The %s is the LIKE pattern, as Django's
# icontains compares: the stored `UPPER(tool_args)` of migration traces 0014 (trigram-indexed) against the
# pattern upper-cased.
TOOL_ARGS_TRACES = "SELECT ts.trace_id FROM traces_tracesearch ts WHERE ts.tool_args_folded LIKE UPPER(%s)"
PENDING_TOOL_ARGS = """
    SELECT st.trace_id FROM traces_searchpending p JOIN traces_step st ON st.trace_id = p.trace_id
    WHERE UPPER(st.tool_args::text) LIKE UPPER(%s)
"""
