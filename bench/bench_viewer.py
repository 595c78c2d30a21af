"""Viewer benchmark: does a 10,000-step, ~50 MB trace open as fast as a 100-step one?

    python bench/bench_viewer.py [--runs 15] [--steps 10000] [--step-kb 5]

Sets up its own throwaway database: with DATABASE_URL (PostgreSQL) a fresh `<name>_bench_viewer` database
on that server (the named database itself is never touched), otherwise a temporary SQLite file. Times the
server rendering (Django test Client: middleware, views, templates; no network) of the annotation page,
a middle page of steps (htmx partial) and a deep link near the end, median of --runs, for both traces,
and prints the ratio large/small (goal: < 1.5) and the query count of each request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.5


def setup_database() -> str:
    sys.path.insert(0, str(ROOT))
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        sys.path.insert(0, str(Path(__file__).parent))
        from _setup import _recreate_database

        throwaway = url.rsplit("/", 1)[0] + "/" + url.rsplit("/", 1)[1].split("?")[0] + "_bench_viewer"
        _recreate_database(throwaway)
        os.environ["DATABASE_URL"] = throwaway
    else:
        os.environ.pop("DATABASE_URL", None)
        os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix="bench-viewer-")
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    return f"{connection.vendor} ({connection.settings_dict['NAME']})"


def step_content(i: int, size: int) -> str:
    """About `size` characters of log-like tool output, with a JSON body now and then."""
    if i % 7 == 3:
        return (
            '{"status": "ok", "rows": ['
            + ", ".join(f'{{"id": {j}, "v": "{"x" * 40}"}}' for j in range(size // 60))
            + "]}"
        )
    line = f"[step {i}] 2025-01-01T00:00:{i % 60:02d}Z INFO worker: processed batch item, checksum=deadbeef{i:08d}\n"
    return (line * (size // len(line) + 1))[:size]


def build(n_small: int, n_large: int, step_kb: int):
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotator.models import Assignment, Membership, Project
    from annotator.services.assignment import do_assign
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.models import Batch, Step, Trace

    load_builtin_taxonomies()
    user = get_user_model().objects.create_user("bench-annotator", password="bench-password-123")
    project = Project.objects.create(slug="bench", name="Bench", taxonomy_version=resolve_version("mast"))
    Membership.objects.create(project=project, user=user, role="annotator")
    batch = Batch.objects.create(name="bench-viewer")
    project.batches.add(batch)
    kinds = ["message", "reasoning", "tool_call", "tool_result", "observation"]
    traces = {}
    for label, n in (("small", n_small), ("large", n_large)):
        trace = Trace.objects.create(
            batch=batch, external_id=label, content_hash=label * 8, task="Benchmark task", step_count=n
        )
        with transaction.atomic():
            for start in range(0, n, 1000):
                Step.objects.bulk_create(
                    Step(
                        trace=trace,
                        index=i,
                        agent=f"agent-{i % 4}",
                        kind=kinds[i % 5],
                        tool_name="run_query" if i % 5 == 2 else "",
                        tool_args={"sql": f"select * from t where id = {i}"} if i % 5 == 2 else None,
                        content=step_content(i, step_kb * 1000),
                        parent_index=i - 1 if i % 5 == 3 else None,
                        depth=1 if i % 5 == 3 else 0,
                        tokens=100 + i % 50,
                    )
                    for i in range(start, min(n, start + 1000))
                )
        traces[label] = trace
    do_assign(project)
    slots = {label: Assignment.objects.get(trace=trace, annotator=user) for label, trace in traces.items()}
    return user, project, traces, slots


def measure(
    client, urls: dict[str, tuple[str, dict]], runs: int, *, cold: bool = False
) -> dict[str, tuple[float, int]]:
    """Median milliseconds and query count per URL; the URLs are timed in turn within each run, so a
    machine that gets busier (or quieter) during the benchmark affects every URL alike. `cold` empties
    the cache before each request (search results are cached per trace)."""
    from django.core.cache import cache
    from django.core.signals import request_started
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    request_started.disconnect(reset_queries)  # else each request empties the log being counted
    reset_queries()  # and the log is capped (9,000 entries): building the traces filled it
    counts, times = {}, {label: [] for label in urls}
    for label, (url, headers) in urls.items():
        response = client.get(url, **headers)  # warm-up (templates, caches)
        assert response.status_code == 200, (url, response.status_code)
        if cold:
            cache.clear()
        with CaptureQueriesContext(connection) as queries:
            client.get(url, **headers)
        counts[label] = len(queries)
    for _ in range(runs):
        for label, (url, headers) in urls.items():
            if cold:
                cache.clear()
            start = time.perf_counter()
            client.get(url, **headers)
            times[label].append(time.perf_counter() - start)
    return {label: (statistics.median(times[label]) * 1000, counts[label]) for label in urls}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--step-kb", type=int, default=5)
    args = parser.parse_args()
    database = setup_database()
    started = time.perf_counter()
    user, project, traces, slots = build(args.small, args.steps, args.step_kb)
    print(
        f"database: {database}; built {args.small} + {args.steps} steps in {time.perf_counter() - started:.1f} s"
    )

    from django.db.models import Sum
    from django.db.models.functions import Length
    from django.test import Client

    from traces.models import Step

    client = Client()
    client.force_login(user)
    htmx = {"HTTP_HX_REQUEST": "true"}
    sizes = {
        label: (
            trace.step_count,
            Step.objects.filter(trace=trace).aggregate(total=Sum(Length("content")))["total"],
        )
        for label, trace in traces.items()
    }

    def cases(label: str) -> dict[str, tuple[str, dict]]:
        trace, slot, n = traces[label], slots[label], traces[label].step_count
        middle = max(1, n // 100)  # a middle page of the large trace, and its equivalent in the small one
        return {
            "annotation page": (f"/p/{project.slug}/a/{slot.pk}/", {}),
            "steps page (htmx)": (f"/p/{project.slug}/t/{trace.pk}/steps/?page={middle}", htmx),
            "deep link near end": (f"/p/{project.slug}/a/{slot.pk}/?step={n - 3}", {}),
            "first search (htmx)": (
                f"/p/{project.slug}/t/{trace.pk}/steps/?q=checksum%3Ddeadbeef{n - 5:08d}",
                htmx,
            ),
        }

    rows, ratios = [], []
    for case in cases("small"):
        urls = {label: cases(label)[case] for label in traces}
        result = measure(client, urls, args.runs, cold=case == "first search (htmx)")
        (small_ms, small_q), (large_ms, large_q) = result["small"], result["large"]
        ratio = large_ms / small_ms
        if case != "first search (htmx)":
            ratios.append(ratio)
        rows.append(
            (
                case,
                f"{sizes['small'][0]:,} steps / {sizes['small'][1] / 1e6:.1f} MB",
                f"{small_ms:.1f} ms ({small_q} q)",
                f"{sizes['large'][0]:,} steps / {sizes['large'][1] / 1e6:.1f} MB",
                f"{large_ms:.1f} ms ({large_q} q)",
                f"{ratio:.2f}",
            )
        )
    sys.path.insert(0, str(Path(__file__).parent))
    from _setup import table

    print(table(rows, ("request", "small trace", "median", "large trace", "median", "ratio")))
    worst = max(ratios)
    verdict = "OK" if worst < GOAL else "SLOWER THAN GOAL"
    print(
        f"worst page ratio {worst:.2f} (goal < {GOAL}): {verdict}; a first search reads the whole trace (then it is cached), shown apart"
    )
    return 0 if worst < GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
