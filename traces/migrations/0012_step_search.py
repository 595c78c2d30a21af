"""Full-text search of step content (issue 28), PostgreSQL only: a search table filled after the import.

`traces_stepsearch (trace_id, index, vector)` holds `to_tsvector('simple', content)` of every step, with a
GIN index on `vector`; `traces_searchpending (trace_id)` names the traces whose steps are not in it yet.
A GIN expression index on traces_step itself made every import pay for to_tsvector and the GIN insert of
each step (1.63x the import at 100,000 traces, docs/benchmarks.md; the issue allows 1.2x). Now:

- a statement trigger on traces_step INSERT (and UPDATE) puts the distinct trace ids it wrote into traces_searchpending
  (one small row per trace, whoever writes steps: the COPY import, bulk_create, the factories);
- the task `annotator.search.index_pending` (annotator/search/indexing.py), sent after an import commits and by the
  periodic reconciliation, claims pending traces by the chunk and writes their search rows;
- the search (annotator/search/service.py) reads the search table, plus a plain scan of the steps of the
  traces still pending (usually none or one import's worth), so a trace is found before and after its
  indexing alike;
- deleting traces deletes their search and pending rows (a statement trigger, as migration 0010 does for
  the steps; nothing points at a step or a search row, so there is no foreign key to check per row).

'simple' (no stemming, no stop words) because step content is code, logs and tool output in any language.
Also here, for the `tool` filter: a partial btree on the tool calls' (tool_name, trace_id); its cost on the
import is measured with the search's by bench/bench_trace_search.py.

SQLite (the embedded demo) has none of this; its search is a LIKE scan (see annotator/search/service.py).
Steps already in the database when this runs are indexed here, in the migration.
"""

from django.db import migrations

# A database that ran this migration's first, unreleased form (a GIN expression index on traces_step) loses
# that index going back (`migrate traces 0011`) and forward.
EXPRESSION_INDEX = "DROP INDEX IF EXISTS traces_step_content_fts"

CREATE = [
    EXPRESSION_INDEX,
    """
    CREATE TABLE traces_stepsearch (
        trace_id bigint NOT NULL,
        "index" integer NOT NULL,
        vector tsvector NOT NULL,
        PRIMARY KEY (trace_id, "index")
    )
    """,
    "CREATE INDEX traces_stepsearch_vector ON traces_stepsearch USING gin (vector)",
    "CREATE TABLE traces_searchpending (trace_id bigint PRIMARY KEY)",
    """
    CREATE FUNCTION traces_step_search_pending() RETURNS trigger AS $$
    BEGIN
        INSERT INTO traces_searchpending (trace_id)
        SELECT DISTINCT trace_id FROM written ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$ LANGUAGE plpgsql
    """,
    """
    CREATE TRIGGER step_search_pending AFTER INSERT ON traces_step
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION traces_step_search_pending()
    """,
    # Steps are not edited after the import, but a step whose content changes is indexed again all the same.
    """
    CREATE TRIGGER step_search_pending_update AFTER UPDATE ON traces_step
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION traces_step_search_pending()
    """,
    """
    CREATE FUNCTION traces_trace_search_deleted() RETURNS trigger AS $$
    BEGIN
        DELETE FROM traces_stepsearch WHERE trace_id IN (SELECT id FROM gone);
        DELETE FROM traces_searchpending WHERE trace_id IN (SELECT id FROM gone);
        RETURN NULL;
    END $$ LANGUAGE plpgsql
    """,
    """
    CREATE TRIGGER trace_search_deleted AFTER DELETE ON traces_trace
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION traces_trace_search_deleted()
    """,
    # The `tool` filter (steps calling a tool, by name): an index-only scan of the tool calls, not a scan
    # of every step (378 -> 43 ms at 100,000 traces); partial, so the import updates it for tool calls only.
    "CREATE INDEX traces_step_tool ON traces_step (tool_name, trace_id) WHERE tool_name <> ''",
    """
    INSERT INTO traces_stepsearch (trace_id, "index", vector)
    SELECT trace_id, "index", to_tsvector('simple', content) FROM traces_step
    """,
]
DROP = [
    EXPRESSION_INDEX,
    "DROP INDEX IF EXISTS traces_step_tool",
    "DROP TRIGGER IF EXISTS trace_search_deleted ON traces_trace",
    "DROP FUNCTION IF EXISTS traces_trace_search_deleted()",
    "DROP TRIGGER IF EXISTS step_search_pending ON traces_step",
    "DROP TRIGGER IF EXISTS step_search_pending_update ON traces_step",
    "DROP FUNCTION IF EXISTS traces_step_search_pending()",
    "DROP TABLE IF EXISTS traces_searchpending",
    "DROP TABLE IF EXISTS traces_stepsearch",
]


def _run(statements):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("traces", "0011_step_keyed_by_place")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
