"""Annotators benchmark: 50 people claiming, drafting and submitting at once, against gunicorn on PostgreSQL.

    python bench/bench_annotators.py [--annotators 50] [--traces 3000] [--overlap 2]
        [--saturation 25] [--paced 35] [--pause 2.0] [--workers 3] [--worker-class sync] [--threads 4]
        [--labels 2] [--no-celery-worker]

Uses its own throwaway database (bench/_setup.py: a uniquely named PostgreSQL database on the DATABASE_URL
server, dropped at the end). Builds a project (MAST, overlap 2) of --traces synthetic traces and
--annotators annotators with API tokens, starts gunicorn on a free local port against that database (DEBUG
off, secrets generated for the run), and drives every annotator in a thread of its own through the API the
browser's scripts and API clients use: claim next (POST .../assignments/next/), save a draft (PUT
.../annotation/), submit (POST .../submit/), in a loop.

Two phases: saturation (no pause: cycles per second; goal >= 50) and paced (each annotator pauses --pause
seconds between actions: p50/p95/p99 per action; goal p95 < 150 ms). Latency is measured twice: by the
client (request sent to response read, queueing in gunicorn's backlog included) and by the server
(gunicorn's access log %(D)s, from the worker accepting the request to its response sent). Afterwards SQL
checks that every submission answered 200 is in the database as submitted (lost: goal 0), and that no trace
holds more human slots or submitted annotations than its overlap (goal 0); errors (any answer but 200, or no
answer) goal 0. With the Celery worker, it then waits (up to a minute) until every trace whose required
annotations are in has its adjudication item (goal: none left). It also reports the CPU time per cycle of the web workers, the database backends, the Celery
worker and the client (from /proc; per three requests answered, so cycles still under way at the stop
count for what they did): on a machine shared with other jobs, the figure they disturb least. Before the
phases, every annotator makes one light request, so each gunicorn worker has loaded its code.

Background work: with REDIS_URL set (the real deployment), submits enqueue the adjudication check and the
debounced report refresh on a queue of the run's own, and one Celery worker (solo pool) takes them, on the
same machine. Without Redis, tasks run inline (eager) in the web process, which is the laptop demo, not a
deployment; the bench says so.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _annotators_server import REDIS_URL, Server, cpu_snapshot, cpu_used
from _annotators_world import build, checks, wait_for_checks
from _setup import goal, setup_django, table

CYCLES_GOAL = 50.0
P95_GOAL_MS = 150.0
ACTIONS = ("claim", "draft", "submit")


@dataclass
class Results:
    """What the client threads record (appends to lists are atomic under the GIL)."""

    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    submitted: list[int] = field(default_factory=list)  # assignments whose submit answered 200
    cycles: int = 0  # submits completed before the phase's stop
    actions: int = 0  # requests answered before the phase's stop (claims, drafts and submits)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per process group in the phase
    empty: int = 0  # annotators whose queue ran dry


def annotator_loop(
    port: int,
    slug: str,
    token: str,
    codes: list[str],
    n_labels: int,
    pause: float,
    stop: threading.Event,
    results: Results,
    seed: int,
) -> None:
    """One annotator: claim, draft, submit, again, until the phase stops or the queue is empty.

    The client is the standard library's http.client: 50 threads of a heavier client would take a good
    share of a 2-core machine from the server being measured. Paced annotators start at a random moment
    within one pause and pause 0.8-1.2 times --pause, so their requests do not arrive in lockstep."""
    rng = random.Random(seed)
    api = f"/api/projects/{slug}/assignments"
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    n = 0

    def call(action: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict] | None:
        data = json.dumps(body).encode() if body is not None else None
        started = time.perf_counter()
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as error:
            conn.close()
            results.errors.append(f"{action}: {type(error).__name__}: {error}")
            return None
        results.latency[action].append((time.perf_counter() - started) * 1000)
        if response.status not in (200, 204):
            results.errors.append(f"{action}: {response.status} {raw[:200]!r}")
            return None
        return response.status, (json.loads(raw) if raw else {})

    def rest() -> bool:
        """Pause between actions; False when the phase is over."""
        return not stop.wait(pause * rng.uniform(0.8, 1.2)) if pause else not stop.is_set()

    if pause and stop.wait(rng.uniform(0, pause)):
        return
    while not stop.is_set():
        claimed = call("claim", "POST", f"{api}/next/")
        if claimed is None:
            if not rest():
                return
            continue
        if claimed[0] == 204:
            results.empty += 1
            return
        assignment = claimed[1]["id"]
        picked = [codes[(seed + n + k) % len(codes)] for k in range(n_labels)]
        labels = [{"mode": code, "evidence": [{"step": k}]} for k, code in enumerate(picked)]
        n += 1
        if not rest():
            return
        draft = call("draft", "PUT", f"{api}/{assignment}/annotation/", {"version": 0, "labels": labels[:1]})
        if draft is None or not rest():
            return
        body = {"version": draft[1]["version"], "labels": labels, "confidence": 4}
        if call("submit", "POST", f"{api}/{assignment}/submit/", body) is not None:
            results.submitted.append(assignment)
        if not rest():
            return


def run_phase(
    server: Server, slug: str, tokens: list[str], codes: list[str], args, *, seconds: float, pause: float
) -> tuple[Results, float, dict[str, list[float]]]:
    results = Results()
    stop = threading.Event()
    start_offset = server.log_offset()
    cpu_start = cpu_snapshot(server)
    threads = [
        threading.Thread(
            target=annotator_loop,
            args=(server.port, slug, token, codes, args.labels, pause, stop, results, i),
            daemon=True,
        )
        for i, token in enumerate(tokens)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    # Cycles are counted until the stop; requests in flight finish (they are checked like any other).
    cycles_at_stop = len(results.submitted)
    actions_at_stop = sum(len(times) for times in list(results.latency.values()))
    elapsed = time.perf_counter() - started
    results.cpu = cpu_used(cpu_start, cpu_snapshot(server))
    for thread in threads:
        thread.join(timeout=120)
    time.sleep(0.3)  # gunicorn writes the access line after the response
    results.cycles = cycles_at_stop
    results.actions = actions_at_stop
    return results, elapsed, server.server_times(start_offset, server.log_offset())


def warm_up(port: int, slug: str, tokens: list[str]) -> None:
    """Every annotator asks for their (empty) list of submitted slots once, all at once, so each gunicorn
    worker has loaded the API's code and opened its database connection before a phase counts CPU."""

    def ask(token: str) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request(
                "GET",
                f"/api/projects/{slug}/assignments/?status=submitted",
                headers={"Authorization": f"Token {token}"},
            )
            conn.getresponse().read()
        finally:
            conn.close()

    threads = [threading.Thread(target=ask, args=(token,), daemon=True) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--traces", type=int, default=3000)
    parser.add_argument("--overlap", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8, help="steps per synthetic trace")
    parser.add_argument("--labels", type=int, default=2, help="failure modes per submitted annotation")
    parser.add_argument("--saturation", type=float, default=25.0, help="seconds of the no-pause phase")
    parser.add_argument("--paced", type=float, default=35.0, help="seconds of the paced phase")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between actions when paced")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--worker-class", choices=("sync", "gthread"), default="sync")
    parser.add_argument("--threads", type=int, default=4, help="threads per gthread worker")
    parser.add_argument(
        "--no-celery-worker", action="store_true", help="with Redis: leave the follow-up tasks queued"
    )
    args = parser.parse_args()

    setup_django(need_postgres=True)
    t0 = time.perf_counter()
    slug, tokens, codes = build(args.traces, args.overlap, args.annotators, args.steps)
    print(
        f"built {args.traces} traces x {args.steps} steps, overlap {args.overlap}, {args.annotators} "
        f"annotators in {time.perf_counter() - t0:.1f} s"
    )
    threads = f" x {args.threads} threads" if args.worker_class == "gthread" else ""
    background = (
        "Redis broker, one Celery worker (solo)"
        if REDIS_URL and not args.no_celery_worker
        else "Redis broker, no worker (tasks stay queued)"
        if REDIS_URL
        else "no Redis: follow-up tasks run inline in the web process (eager, the laptop demo)"
    )
    print(f"gunicorn: {args.workers} {args.worker_class} workers{threads}; {background}")

    workdir = Path(tempfile.mkdtemp(prefix="bench-annotators-"))
    server = Server(args, workdir)
    try:
        server.wait_ready()
        warm_up(server.port, slug, tokens)
        phases = [
            ("saturation", *run_phase(server, slug, tokens, codes, args, seconds=args.saturation, pause=0)),
            ("paced", *run_phase(server, slug, tokens, codes, args, seconds=args.paced, pause=args.pause)),
        ]
        waiting = wait_for_checks(slug) if server.celery else None
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    rows = []
    for name, results, _elapsed, server_ms in phases:
        for action in ACTIONS:
            client = results.latency.get(action, [])
            srv = server_ms.get(action, [])
            rows.append(
                (
                    name,
                    action,
                    len(client),
                    f"{statistics.median(client):.0f}" if client else "-",
                    f"{pct(client, 95):.0f}",
                    f"{pct(client, 99):.0f}",
                    f"{statistics.median(srv):.1f}" if srv else "-",
                    f"{pct(srv, 95):.1f}",
                    f"{pct(srv, 99):.1f}",
                )
            )
    print()
    print(
        table(
            rows,
            (
                "phase",
                "action",
                "requests",
                "client p50 ms",
                "client p95",
                "client p99",
                "server p50 ms",
                "server p95",
                "server p99",
            ),
        )
    )
    all_submitted = [a for _, results, _, _ in phases for a in results.submitted]
    lost, over_slots, over_submitted = checks(slug, all_submitted)
    errors = [e for _, results, _, _ in phases for e in results.errors]
    print()
    summary = []
    for name, results, elapsed, _ in phases:
        # Per 3 requests answered, not per submit: when few cycles finish (a loaded machine, a short phase),
        # the claims and drafts of the 50 cycles still under way would otherwise all count against them.
        per_cycle = {group: 3000 * cpu / max(results.actions, 1) for group, cpu in results.cpu.items()}
        server_ms = per_cycle["web"] + per_cycle["database"] + per_cycle["worker"]
        summary.append(
            (
                name,
                f"{elapsed:.1f}",
                results.cycles,
                f"{results.cycles / elapsed:.1f}",
                len(results.errors),
                f"{per_cycle['web']:.0f}",
                f"{per_cycle['database']:.0f}",
                f"{per_cycle['worker']:.0f}",
                f"{per_cycle['client']:.0f}",
                f"{2000 / server_ms:.0f}" if server_ms else "-",
            )
        )
    print(
        table(
            summary,
            (
                "phase",
                "seconds",
                "cycles",
                "cycles/s",
                "errors",
                "CPU ms/cycle: web",
                "database",
                "celery",
                "client",
                "cycles/s if 2 idle cores",
            ),
        )
    )
    print(
        "(a cycle: claim + draft + submit; CPU from /proc per process group, per 3 requests answered; the last "
        "column is 2 cores' worth of CPU divided by the server's CPU per cycle, a ceiling the client and other "
        "jobs lower)"
    )
    if any(results.empty for _, results, _, _ in phases):
        print("note: some annotators' queues ran dry (raise --traces)")
    for error in sorted(set(errors))[:10]:
        print(f"error: {error}")
    print(f"submissions answered 200: {len(all_submitted)}; checked in SQL after the run")
    print()

    _, saturation, seconds, _ = phases[0]
    rate = saturation.cycles / seconds
    goal("cycles/s at saturation", f"{rate:.1f}", f">= {CYCLES_GOAL:.0f}", rate >= CYCLES_GOAL)
    _, paced, _, paced_server = phases[1]
    for action in ACTIONS:
        p95 = pct(paced.latency.get(action, []), 95)
        server_p95 = pct(paced_server.get(action, []), 95)
        goal(
            f"paced {action} p95",
            f"{p95:.0f} ms client ({server_p95:.0f} ms server)",
            f"< {P95_GOAL_MS:.0f} ms client",
            p95 < P95_GOAL_MS,
        )
    goal("errors", str(len(errors)), "0", not errors)
    goal("lost submissions", str(lost), "0", lost == 0)
    goal("traces over their overlap", str(over_slots + over_submitted), "0", over_slots + over_submitted == 0)
    if waiting is not None:
        left, waited = waiting
        goal(
            "completed traces without an adjudication check",
            f"{left} ({waited:.1f} s after the run)",
            "0",
            left == 0,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
