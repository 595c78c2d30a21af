"""Benchmark: `like=TRACE_ID` over 100,000 traces (issue 33 item 4), and the time to build a representation.

    python bench/bench_similar.py [--traces 100000] [--build-traces 5000] [--repeat 5]
    BENCH_SIMILAR_TRACES=10000 make bench   # a quick run at a tenth of the size

Needs PostgreSQL (bench/_setup.py).

1. The build, for real: `do_request_build` + `do_build` (TF-IDF + SVD fitted on the project's text, a vector
   per trace written in chunks) over --build-traces traces x 20 steps of a separate project. Reported as
   seconds and traces per second, and the time 100,000 traces would take at that rate. Building TF-IDF over
   the full 100,000 x 20 = 2M steps takes minutes on a shared 2-core machine, so the ranking below does not
   wait for it: its vectors are generated directly (next point), which is what the ranking reads anyway.
2. The ranking: --traces traces in a project whose representation (128 float32 dimensions, as the TF-IDF
   build writes) is generated directly with COPY: 2,000 clusters of near-duplicates around random centres,
   stored exactly as a build stores them. Timed as the server computes it (`trace_list_body`: the filter, the
   count, the first page of 50, serialization), median of --repeat after one warm-up: `like` alone and
   combined with filters (goal: first page < 200 ms). The matrix's first load in a process (cold) is reported
   on its own row. Baseline, measured in the same run: the unfiltered first page with its count; and a
   brute-force scan: every vector read from PostgreSQL and scored in numpy, which is what a request would do
   without the per-process matrix.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from _setup import goal, setup_django, table
from bench_signatures import copy_rows

DIMENSIONS = 128
CLUSTERS = 2_000
LIKE_BUDGET_MS = 200
MODELS = ("gpt-4o", "claude-3.5-sonnet", "llama-3-70b")
WORDS = [
    "the",
    "pod",
    "restarts",
    "deploy",
    "check",
    "logs",
    "error",
    "retry",
    "timeout",
    "rollback",
    "namespace",
    "production",
    "staging",
    "delete",
    "kubectl",
    "apply",
    "config",
    "service",
    "scale",
    "replica",
    "agent",
    "plan",
    "verify",
    "answer",
    "search",
    "result",
    "file",
    "test",
    "patch",
    "commit",
    "build",
    "failed",
    "passed",
    "user",
    "task",
    "tool",
    "call",
    "output",
    "memory",
    "cache",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=int(os.environ.get("BENCH_SIMILAR_TRACES", "100000")))
    parser.add_argument(
        "--build-traces", type=int, default=int(os.environ.get("BENCH_SIMILAR_BUILD_TRACES", "5000"))
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    setup_django(need_postgres=True)
    measure_build(args.build_traces)
    started = time.perf_counter()
    project, like = insert_world(args.traces, seed=33)
    print(f"world: {args.traces:,} traces and their vectors written in {time.perf_counter() - started:.1f} s")
    measure_ranking(project, like, args)
    return 0


def _project(slug: str, batch_name: str):
    from annotator.models import Project
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.models import Batch

    load_builtin_taxonomies()
    project = Project.objects.create(slug=slug, name=slug, taxonomy_version=resolve_version("mast"))
    batch = Batch.objects.create(name=batch_name)
    project.batches.add(batch)  # before the traces: the membership triggers put each in the project
    return project, batch


def _traces(batch, n: int, rng) -> np.ndarray:
    from django.utils import timezone

    from traces.models import Trace

    score = rng.random(n)
    rows = (
        (
            batch.pk,
            f"t{i:07d}",
            f"{batch.name}-{i}",
            MODELS[i % 3],
            "failure" if score[i] < 0.6 else "success",
            float(score[i]),
            20,
        )
        for i in range(n)
    )
    columns = ("batch_id", "external_id", "content_hash", "model", "outcome", "score", "step_count")
    return copy_rows(Trace(batch=batch, created_at=timezone.now()), columns, rows, n)


def measure_build(n: int) -> None:
    """A real TF-IDF build over n traces x 20 steps (steps of a few words drawn per trace's topic)."""
    from django.db import connection, transaction

    from annotator.similar.service import do_build, do_request_build
    from traces.models import Step

    rng = np.random.default_rng(7)
    with transaction.atomic():
        project, batch = _project("bench-build", "build")
        ids = _traces(batch, n, rng)
        topics = rng.integers(0, 40, n)
        words = np.array(WORDS)

        def steps():
            for k, trace_id in enumerate(ids.tolist()):
                pool = words[(np.arange(8) + topics[k]) % len(words)]
                for i in range(20):
                    text = " ".join(rng.choice(pool, 10).tolist()) + f" step {i}"
                    yield Step(trace_id=trace_id, index=i, kind="message", content=text)

        Step.objects.bulk_create(steps(), batch_size=5_000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    started = time.perf_counter()
    build = do_build(do_request_build(project).pk)
    seconds = time.perf_counter() - started
    assert build.status == "succeeded", build.error
    rate = n / seconds
    print(
        table(
            [
                (f"TF-IDF + SVD build, {n:,} traces x 20 steps", f"{seconds:.1f}", f"{rate:,.0f}"),
                ("  the same rate for 100,000 traces (extrapolated)", f"{100_000 / rate:.0f}", ""),
            ],
            ("build", "seconds", "traces/s"),
        )
    )


def insert_world(n: int, seed: int):
    """n traces, and a succeeded representation whose vectors are generated: clusters of near-duplicates."""
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator.models import TraceRepresentation, TraceVector
    from annotator.similar.vectors import normalised, pack

    rng = np.random.default_rng(seed)
    with transaction.atomic():
        project, batch = _project("bench", "run")
        ids = _traces(batch, n, rng)
        centres = normalised(rng.normal(size=(CLUSTERS, DIMENSIONS)))
        cluster = rng.integers(0, CLUSTERS, n)
        vectors = normalised(centres[cluster] + 0.15 * rng.normal(size=(n, DIMENSIONS)).astype(np.float32))
        copy_rows(
            TraceVector(project=project, version=1, trace_id=0, vector=b""),
            ("trace_id", "vector"),
            ((int(pk), pack(v)) for pk, v in zip(ids, vectors, strict=True)),
            n,
        )
        TraceRepresentation.objects.create(
            project=project,
            version=1,
            method=TraceRepresentation.Method.TFIDF,
            dimensions=DIMENSIONS,
            traces_total=n,
            traces_done=n,
            status="succeeded",
            finished_at=timezone.now(),
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return project, int(ids[n // 2])


def _timed(fn, repeat: int) -> float:
    fn()  # warm-up: plans, caches and the process's matrix, as a server that has answered once
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure_ranking(project, like: int, args) -> None:
    from django.db import connection
    from django.http import QueryDict

    from annotator.access import ProjectAccess
    from annotator.api.traces import trace_list_body
    from annotator.models import Role
    from annotator.similar.service import forget_cached_indexes

    access = ProjectAccess(user=None, project=project, roles=frozenset({Role.OWNER}))

    def page(query: str):
        return lambda: trace_list_body(access, QueryDict(query), "/api/projects/bench/traces/")

    baseline = _timed(page(""), args.repeat)
    rows = [("(baseline) unfiltered first page + count", f"{baseline:.1f}", "1.00x", "", "")]

    def brute_force():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT trace_id, vector FROM annotator_tracevector WHERE project_id = %s AND version = 1",
                [project.pk],
            )
            fetched = cursor.fetchall()
        ids = np.fromiter((r[0] for r in fetched), dtype=np.int64, count=len(fetched))
        matrix = np.frombuffer(b"".join(bytes(r[1]) for r in fetched), dtype="<f4").reshape(len(ids), -1)
        scores = matrix @ matrix[int(np.nonzero(ids == like)[0][0])]
        return ids[np.argsort(-scores)[:51]]

    brute = _timed(brute_force, args.repeat)
    rows.append(
        (
            "(baseline) brute force: every vector read and scored",
            f"{brute:.1f}",
            f"{brute / baseline:.2f}x",
            "",
            "",
        )
    )
    forget_cached_indexes()
    started = time.perf_counter()
    page(f"like={like}")()
    cold = (time.perf_counter() - started) * 1000
    rows.append(
        (
            f"like={like}: first request of the process (loads the matrix)",
            f"{cold:.1f}",
            f"{cold / baseline:.2f}x",
            "",
            "",
        )
    )
    worst = 0.0
    for query in (
        f"like={like}",
        f"like={like}&page=3",
        f"like={like}&outcome=failure",
        f"like={like}&model=gpt-4o&score_max=0.3",
        f"like={like}&score_min=0.99",
        f"like={like}&ordering=-score",
    ):
        ms = _timed(page(query), args.repeat)
        body = page(query)()
        worst = max(worst, ms)
        rows.append(
            (
                query,
                f"{ms:.1f}",
                f"{ms / baseline:.2f}x",
                f"{body['count']:,}",
                "ok" if ms < LIKE_BUDGET_MS else "SLOW",
            )
        )
    print(
        table(
            rows, ("query (first page of 50 + count)", "ms", "vs baseline", "count", f"< {LIKE_BUDGET_MS} ms")
        )
    )
    goal(
        f"like= over {args.traces:,} traces, first page (worst of the rows above)",
        f"{worst:.0f} ms",
        f"< {LIKE_BUDGET_MS} ms",
        worst < LIKE_BUDGET_MS,
    )


if __name__ == "__main__":
    sys.exit(main())
