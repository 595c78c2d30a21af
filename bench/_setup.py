"""Shared set-up for benchmarks: a throwaway PostgreSQL database of their own, Django, and goal reporting.

Benchmarks use the server named by ``DATABASE_URL`` (like everything else; when it is unset, the local
trust-auth server on 127.0.0.1:5432 if one answers) and never touch an existing database: each run creates a
database with a unique name on that server, and drops it when the run ends.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCAL_PG = "postgres://postgres@127.0.0.1:5432/postgres"
# A child process of a bench (run in its own process to measure its own memory) reuses its parent's database.
CHILD_ENV = "BENCH_CHILD_DATABASE_URL"


def setup_django(*, need_postgres: bool = False) -> str:
    """Point Django at a fresh benchmark database, migrate it, and return its vendor."""
    sys.path.insert(0, str(ROOT))
    inherited = os.environ.get(CHILD_ENV)
    if inherited:
        os.environ["DATABASE_URL"] = inherited
    else:
        server = os.environ.get("DATABASE_URL") or (LOCAL_PG if _postgres_reachable() else "")
        if server.startswith("postgres"):
            url = _create_database(server)
            os.environ["DATABASE_URL"] = url
            os.environ[CHILD_ENV] = url
        elif need_postgres:
            raise SystemExit(
                "This benchmark needs PostgreSQL: set DATABASE_URL=postgres://user@host:port/any"
            )
        else:
            os.environ.pop("DATABASE_URL", None)
            os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix="annotator-bench-")
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    if not inherited:
        call_command("migrate", verbosity=0)
    return connection.vendor


def _postgres_reachable() -> bool:
    try:
        import psycopg

        with psycopg.connect(_libpq(LOCAL_PG), connect_timeout=2):
            return True
    except Exception:
        return False


def _libpq(url: str) -> str:
    return url.replace("postgres://", "postgresql://", 1)


def _create_database(server_url: str) -> str:
    """A new database on the server of `server_url`, dropped at exit; returns its URL."""
    import psycopg

    base = server_url.split("?", 1)[0].rsplit("/", 1)[0]
    name = f"bench_{os.getpid()}_{secrets.token_hex(4)}"
    admin = _libpq(base + "/postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        from django.core.exceptions import ImproperlyConfigured
        from django.db import connections

        # The settings may never have loaded (say, no SECRET_KEY): then there is no connection to close.
        with contextlib.suppress(ImproperlyConfigured):
            connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    atexit.register(drop)
    return f"{base}/{name}"


def table(rows: list[tuple], headers: tuple[str, ...]) -> str:
    cells = [tuple(str(c) for c in row) for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


GOALS_ENV = "BENCH_GOALS_FILE"


def goal(name: str, measured: str, target: str, met: bool) -> None:
    """Print one goal's verdict, and record it for `make bench`'s summary table (bench/run_all.py)."""
    print(f"goal: {name}: {measured} (target {target}) -> {'met' if met else 'NOT met'}")
    path = os.environ.get(GOALS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            row = {"bench": Path(sys.argv[0]).stem, "goal": name, "measured": measured, "target": target}
            fh.write(json.dumps({**row, "met": met}) + "\n")
