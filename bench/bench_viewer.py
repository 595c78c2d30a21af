"""Viewer benchmark: do 10,000- and 100,000-step traces open as fast as a 100-step one?

    python bench/bench_viewer.py [--runs 15] [--steps 10000,100000] [--step-bytes 450]

Uses its own throwaway database (bench/_setup.py: a uniquely named PostgreSQL database on the DATABASE_URL
server, dropped at the end; SQLite when no PostgreSQL answers). Times the server rendering (Django test
Client: middleware, views, templates; no network) of the annotation page, a middle page of steps (htmx
partial), a filtered page, a deep link near the end and a search's first page of hits, median of --runs, for
each trace, and prints the ratio large/small (goal: < 1.5; search: first page under 100 ms) and the query
count of each request.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import goal, setup_django, table

GOAL = 1.5
SEARCH_GOAL_MS = 100.0


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


def build(sizes: dict[str, int], step_bytes: int):
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
    for label, n in sizes.items():
        trace = Trace.objects.create(
            batch=batch,
            external_id=label,
            content_hash=f"bench-viewer-{n}",
            task="Benchmark task",
            step_count=n,
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
                        content=step_content(i, step_bytes),
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


def measure(client, urls: dict[str, tuple[str, dict]], runs: int) -> dict[str, tuple[float, int]]:
    """Median milliseconds and query count per URL; the URLs are timed in turn within each run, so a
    machine that gets busier (or quieter) during the benchmark affects every URL alike. A URL may be a
    function of the request's number: a search for a new string each time is never answered from the cache."""
    from django.core.signals import request_started
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    request_started.disconnect(reset_queries)  # else each request empties the log being counted
    reset_queries()  # and the log is capped (9,000 entries): building the traces filled it
    counts, times = {}, {label: [] for label in urls}
    for label, (url, headers) in urls.items():
        response = client.get(_url(url, 0), **headers)  # warm-up (templates, caches)
        assert response.status_code == 200, (url, response.status_code)
        with CaptureQueriesContext(connection) as queries:
            client.get(_url(url, 1), **headers)
        counts[label] = len(queries)
    for run in range(runs):
        for label, (url, headers) in urls.items():
            start = time.perf_counter()
            client.get(_url(url, run + 2), **headers)
            times[label].append(time.perf_counter() - start)
    return {label: (statistics.median(times[label]) * 1000, counts[label]) for label in urls}


def _settle() -> None:
    """What autovacuum does within a minute of a bulk insert (and `import_traces` does at its end): fold the
    trigram indexes' pending lists in and refresh the planner's statistics, so the timings don't depend on
    when autovacuum happens to run."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE traces_step")


def _url(url, run: int) -> str:
    return url(run) if callable(url) else url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--steps", default="10000,100000", help="large traces' step counts, comma-separated")
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument(
        "--step-bytes", type=int, default=450, help="content per step (100,000 x 450 B = 45 MB)"
    )
    args = parser.parse_args()
    vendor = setup_django()
    large = [int(n) for n in args.steps.split(",")]
    sizes = {"small": args.small, **{f"{n:,} steps": n for n in large}}
    started = time.perf_counter()
    user, project, traces, slots = build(sizes, args.step_bytes)
    print(f"database: {vendor}; built {', '.join(sizes)} in {time.perf_counter() - started:.1f} s")
    _settle()

    from django.db.models import Sum
    from django.db.models.functions import Length
    from django.test import Client

    from traces.models import Step

    client = Client()
    client.force_login(user)
    htmx = {"HTTP_HX_REQUEST": "true"}
    megabytes = {
        label: Step.objects.filter(trace=trace).aggregate(total=Sum(Length("content")))["total"] / 1e6
        for label, trace in traces.items()
    }

    def cases(label: str) -> dict[str, tuple[str, dict]]:
        trace, slot, n = traces[label], slots[label], traces[label].step_count
        middle = max(1, n // 100)  # a middle page of the large trace, and its equivalent in the small one
        base = f"/p/{project.slug}/t/{trace.pk}/steps/"
        return {
            "annotation page": (f"/p/{project.slug}/a/{slot.pk}/", {}),
            "steps page (htmx)": (f"{base}?page={middle}", htmx),
            "filtered by kind (htmx)": (f"{base}?kind=tool_call&page=2", htmx),
            "deep link near end": (f"/p/{project.slug}/a/{slot.pk}/?step={n - 3}", {}),
            # A different step's checksum each request ({run}), so no search is answered from the cache.
            SEARCH: (lambda run: f"{base}?q=checksum%3Ddeadbeef{n - 5 - run:08d}", htmx),
        }

    rows, worst, search_ms = [], dict.fromkeys(large, 0.0), {}
    for case in cases("small"):
        urls = {label: cases(label)[case] for label in traces}
        result = measure(client, urls, args.runs)
        small_ms, small_q = result["small"]
        row = [case, f"{small_ms:.1f} ms ({small_q} q)"]
        for n in large:
            ms, q = result[f"{n:,} steps"]
            row += [f"{ms:.1f} ms ({q} q)", f"{ms / small_ms:.2f}"]
            if case == SEARCH:
                search_ms[n] = ms
            else:
                worst[n] = max(worst[n], ms / small_ms)
        rows.append(tuple(row))
    headers = ["request", f"{args.small} steps ({megabytes['small']:.2f} MB)"]
    for n in large:
        headers += [f"{n:,} steps ({megabytes[f'{n:,} steps']:.0f} MB)", "ratio"]
    print(table(rows, tuple(headers)))
    print("(each search asks for a new string, so none is answered from the cache)")
    for n in large:
        goal(
            f"viewer pages, {n:,} vs {args.small} steps (worst ratio)",
            f"{worst[n]:.2f}",
            f"< {GOAL}",
            worst[n] < GOAL,
        )
        goal(
            f"search first page, {n:,} steps",
            f"{search_ms[n]:.0f} ms",
            f"< {SEARCH_GOAL_MS:.0f} ms",
            search_ms[n] < SEARCH_GOAL_MS,
        )
    return 0


SEARCH = "search, first page (htmx)"


if __name__ == "__main__":
    sys.exit(main())
