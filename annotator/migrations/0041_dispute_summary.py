"""The `disputed_mode` filter's summary (issue 28), PostgreSQL only: one row per (project, trace, mode) that
a submitted work annotation chose, with how many submitted work annotations of the trace chose it and how
many did not, apart for imported raters (whose labels fill the overlap or not, by a project setting read at
query time) and every other rater but language models (whose labels never fill it; annotator.raters).

Why: "disputed" (one annotation that fills the overlap chose the mode and another did not) read the label
tables twice, as an anti-join: 951 ms at 100,000 traces, 7.2 times the unfiltered page (docs/benchmarks.md).
With this table the filter is an index range: disputed = chose > 0 and lacked > 0.

Kept by the database, as the evidence summary of migration 0035 is: statement triggers on
`annotator_labelsummary` (which follows every write of a label, an annotation or its assignment) recompute
the rows of the (project, trace) pairs the statement touched, and triggers on `annotator_rater` those of the
traces a rater's kind changed for (a user may become an imported or model rater after labelling).
`annotator_searchdispute_refresh(projects, traces)` is that recomputation; the backfill runs it once.

SQLite (the embedded demo) has none of this: its filter reads the label tables (annotator.search.service).
"""

import importlib

from django.db import migrations

_search_summaries = importlib.import_module("annotator.migrations.0035_search_summaries")

TABLE = """
CREATE TABLE annotator_searchdispute (
    project_id bigint NOT NULL,
    mode_id bigint NOT NULL,
    trace_id bigint NOT NULL,
    chose integer NOT NULL,
    lacked integer NOT NULL,
    chose_imported integer NOT NULL,
    lacked_imported integer NOT NULL,
    PRIMARY KEY (project_id, mode_id, trace_id)
)
"""

# The same rule as the filter's SQLite path: submitted work annotations of the trace in the project, less
# language models' (a user without a rater row is a human). `$1`, `$2`: the project and trace ids.
_DELETE = """
    DELETE FROM annotator_searchdispute d
    USING (SELECT DISTINCT p, t FROM unnest($1, $2) AS u(p, t)) c
    WHERE d.project_id = c.p AND d.trace_id = c.t
"""
_INSERT = """
    WITH c AS (SELECT DISTINCT p, t FROM unnest($1, $2) AS u(p, t)),
    a AS (
        SELECT s.project_id, s.trace_id, s.annotation_id, COALESCE(r.kind = 'imported', false) AS imported
        FROM c
        JOIN annotator_labelsummary s ON s.project_id = c.p AND s.trace_id = c.t
        LEFT JOIN annotator_rater r ON r.user_id = s.annotator_id
        WHERE s.purpose = 'work' AND s.status = 'submitted' AND r.kind IS DISTINCT FROM 'llm'),
    total AS (
        SELECT project_id, trace_id, count(*) FILTER (WHERE NOT imported) AS n,
               count(*) FILTER (WHERE imported) AS n_imported
        FROM a GROUP BY project_id, trace_id),
    chosen AS (
        SELECT a.project_id, a.trace_id, l.mode_id,
               count(DISTINCT a.annotation_id) FILTER (WHERE NOT a.imported) AS n,
               count(DISTINCT a.annotation_id) FILTER (WHERE a.imported) AS n_imported
        FROM a JOIN annotator_labelapplication l ON l.annotation_id = a.annotation_id
        GROUP BY a.project_id, a.trace_id, l.mode_id)
    INSERT INTO annotator_searchdispute
        (project_id, mode_id, trace_id, chose, lacked, chose_imported, lacked_imported)
    SELECT ch.project_id, ch.mode_id, ch.trace_id, ch.n, t.n - ch.n, ch.n_imported, t.n_imported - ch.n_imported
    FROM chosen ch JOIN total t ON t.project_id = ch.project_id AND t.trace_id = ch.trace_id
"""
# As the label summary's refresh (migration 0024): a few pairs (an annotation saved) by static statements
# planned once per connection (planning them anew took most of each call: a taxonomy migration's thousands
# of per-annotation writes ran 1.6x longer with it); many (a COPY, an import, the backfill) by EXECUTE,
# planned with the arrays at hand.
SMALL = 100


def _refresh(name: str, delete: str, insert: str) -> str:
    small = "".join(
        f"{sql.replace('unnest($1, $2)', 'unnest(projects, traces)')};" for sql in (delete, insert)
    )
    bulk = "".join(f"EXECUTE $q${sql}$q$ USING projects, traces;" for sql in (delete, insert))
    return f"""
CREATE OR REPLACE FUNCTION {name}(projects bigint[], traces bigint[]) RETURNS void AS $$
BEGIN
    IF cardinality(projects) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(projects) <= {SMALL} THEN
        {small}
        RETURN;
    END IF;
    {bulk}
END $$ LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
"""


REFRESH = _refresh("annotator_searchdispute_refresh", _DELETE, _INSERT)


def _evidence_refresh() -> str:
    """The evidence summary's refresh of migration 0035, the same queries, split the same way."""
    steps = _search_summaries.REFRESH.split("EXECUTE $q$")
    delete, insert = (step.split("$q$ USING projects, traces;", 1)[0] for step in steps[1:3])
    assert "unnest($1, $2)" in delete and "unnest($1, $2)" in insert
    return _refresh("annotator_searchevidence_refresh", delete, insert)


# (function, table, event, transition tables, body)
_PAIRS_OF_USERS = """
    PERFORM annotator_searchdispute_refresh(
        ARRAY(SELECT s.project_id FROM annotator_labelsummary s WHERE s.annotator_id IN ({users})),
        ARRAY(SELECT s.trace_id FROM annotator_labelsummary s WHERE s.annotator_id IN ({users})))"""
TRIGGERS = [
    (
        "written",
        "annotator_labelsummary",
        "INSERT",
        "NEW TABLE AS changed_new",
        """
        PERFORM annotator_searchdispute_refresh(
            ARRAY(SELECT project_id FROM changed_new), ARRAY(SELECT trace_id FROM changed_new))""",
    ),
    (
        "changed",
        "annotator_labelsummary",
        "UPDATE",
        "NEW TABLE AS changed_new OLD TABLE AS changed_old",
        """
        PERFORM annotator_searchdispute_refresh(
            ARRAY(SELECT project_id FROM changed_new UNION ALL SELECT project_id FROM changed_old),
            ARRAY(SELECT trace_id FROM changed_new UNION ALL SELECT trace_id FROM changed_old))""",
    ),
    (
        "deleted",
        "annotator_labelsummary",
        "DELETE",
        "OLD TABLE AS changed_old",
        """
        PERFORM annotator_searchdispute_refresh(
            ARRAY(SELECT project_id FROM changed_old), ARRAY(SELECT trace_id FROM changed_old))""",
    ),
    (
        "rater_written",
        "annotator_rater",
        "INSERT",
        "NEW TABLE AS changed_new",
        _PAIRS_OF_USERS.format(users="SELECT user_id FROM changed_new"),
    ),
    (
        "rater_changed",
        "annotator_rater",
        "UPDATE",
        "NEW TABLE AS changed_new OLD TABLE AS changed_old",
        _PAIRS_OF_USERS.format(
            users="SELECT n.user_id FROM changed_new n JOIN changed_old o ON o.user_id = n.user_id "
            "WHERE o.kind IS DISTINCT FROM n.kind"
        ),
    ),
    (
        "rater_deleted",
        "annotator_rater",
        "DELETE",
        "OLD TABLE AS changed_old",
        _PAIRS_OF_USERS.format(users="SELECT user_id FROM changed_old"),
    ),
]


def _forward() -> list[str]:
    statements = [
        TABLE,
        # A rater's kind changing finds that rater's annotations (an import creates its raters one by one).
        "CREATE INDEX labelsummary_annotator_idx ON annotator_labelsummary (annotator_id)",
        REFRESH,
        _evidence_refresh(),
    ]
    for name, table, event, tables, body in TRIGGERS:
        statements.append(
            f"CREATE FUNCTION annotator_searchdispute_{name}() RETURNS trigger AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$ LANGUAGE plpgsql"
        )
        statements.append(
            f"CREATE TRIGGER searchdispute_{name} AFTER {event} ON {table} "
            f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION annotator_searchdispute_{name}()"
        )
    statements.append(
        "SELECT annotator_searchdispute_refresh(ARRAY(SELECT project_id FROM annotator_labelsummary), "
        "ARRAY(SELECT trace_id FROM annotator_labelsummary))"
    )
    return statements


def _backward() -> list[str]:
    statements = []
    for name, table, _, _, _ in TRIGGERS:
        statements.append(f"DROP TRIGGER IF EXISTS searchdispute_{name} ON {table}")
        statements.append(f"DROP FUNCTION IF EXISTS annotator_searchdispute_{name}()")
    statements += [
        _search_summaries.REFRESH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
        "DROP FUNCTION IF EXISTS annotator_searchdispute_refresh(bigint[], bigint[])",
        "DROP INDEX IF EXISTS labelsummary_annotator_idx",
        "DROP TABLE IF EXISTS annotator_searchdispute",
    ]
    return statements


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _forward() if forward else _backward():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0042_live_batches")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
