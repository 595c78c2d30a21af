"""Shared set-up for benchmarks: a throwaway database (PostgreSQL when reachable) and Django."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/annotator_bench"


def setup_django(*, need_postgres: bool = False, recreate: bool = True) -> str:
    """Point Django at a fresh benchmark database, migrate it, and return its vendor."""
    sys.path.insert(0, str(ROOT))
    url = os.environ.get("BENCH_DATABASE_URL") or (DEFAULT_PG if _postgres_reachable() else "")
    if need_postgres and not url.startswith("postgres"):
        raise SystemExit("This benchmark needs PostgreSQL: set BENCH_DATABASE_URL=postgres://...")
    if url.startswith("postgres"):
        if recreate:
            _recreate_database(url)
        os.environ["DATABASE_URL"] = url
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

    if recreate:
        call_command("migrate", verbosity=0)
    return connection.vendor


def _postgres_reachable() -> bool:
    try:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", connect_timeout=2):
            return True
    except Exception:
        return False


def _recreate_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def table(rows: list[tuple], headers: tuple[str, ...]) -> str:
    cells = [tuple(str(c) for c in row) for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)
