"""Which traces a project holds (annotator.models.ProjectTrace): the rows an import into a project writes.

The whole batches a project follows keep their rows by themselves (the triggers of migration annotator 0032:
attaching a batch adds its traces, a trace inserted into it later joins, detaching it removes them), so
attaching stays `project.batches.add(...)`. What is written here is the per-trace part: the traces of
files imported into a project, new or already imported, and nothing else of their batches. Both writes are
one statement per call (or per chunk of ids on SQLite), inside the import's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from annotator.models import Project, ProjectTrace
from traces.models import Batch, Trace

TABLE = ProjectTrace._meta.db_table
# SQLite's limit on a statement's variables (32,766 since 3.32; the older 999 is what Django assumes).
_SQLITE_ROWS = 400


def add_traces(project: Project, trace_ids: Iterable[int]) -> int:
    """Add the traces `trace_ids` to `project` (those it holds already are left alone); returns how many
    were added."""
    ids = sorted(set(trace_ids))
    if not ids:
        return 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"INSERT INTO {TABLE} (project_id, trace_id) SELECT %s, unnest(%s::bigint[]) "
                "ON CONFLICT DO NOTHING",
                [project.pk, ids],
            )
            return cursor.rowcount
        added = 0
        for start in range(0, len(ids), _SQLITE_ROWS):
            part = ids[start : start + _SQLITE_ROWS]
            values = ", ".join(["(%s, %s)"] * len(part))
            params = [value for trace_id in part for value in (project.pk, trace_id)]
            cursor.execute(f"INSERT OR IGNORE INTO {TABLE} (project_id, trace_id) VALUES {values}", params)
            added += cursor.rowcount
        return added


def add_batch_traces_from(project: Project, batch: Batch, first_id: int) -> int:
    """Add the traces of `batch` from id `first_id` on (an import's new traces in a batch the project does
    not follow as a whole) with one INSERT ... SELECT; returns how many were added."""
    with connection.cursor() as cursor:
        ignore = "" if connection.vendor == "postgresql" else "OR IGNORE "
        conflict = " ON CONFLICT DO NOTHING" if connection.vendor == "postgresql" else ""
        cursor.execute(
            f"INSERT {ignore}INTO {TABLE} (project_id, trace_id) "
            f"SELECT %s, t.id FROM {Trace._meta.db_table} t WHERE t.batch_id = %s AND t.id >= %s" + conflict,
            [project.pk, batch.pk, first_id],
        )
        return cursor.rowcount
