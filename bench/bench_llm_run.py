"""LLM runs against a local chat-completions stand-in that answers each request after a fixed latency: does a
run keep `concurrency` requests in flight, so its time is the model's latency divided by the concurrency?

    python bench/bench_llm_run.py [--traces 64 1024] [--concurrency 16] [--latency 1.0] [--quick]

Uses its own throwaway database (bench/_setup.py) and a stand-in in this process (tests/chat_standin.py:
127.0.0.1, allowed for this run only). Each run labels a batch of its own through the real path
(`do_start_run` + `do_process_run`: the prompt built from the database, the HTTP client with its rate
limiter, every answer parsed and stored as an annotation) and is compared with

- its ideal: traces / concurrency x latency (the endpoint's latency is the only cost);
- the rate limit: requests_per_minute is set high enough not to bind (100,000); the table states the floor
  it would impose (traces / rpm minutes) so it is plain that the limit is not what is measured;
- today's behaviour, measured in the same run: 64 traces one request at a time (--quick leaves it out, and
  runs 64 traces only).

Goal: 1,024 traces at concurrency 16 within 1.5x of the ideal.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import ROOT, goal, setup_django, table

sys.path.insert(0, str(ROOT))  # the stand-in is the tests' own (tests/chat_standin.py)
from tests.chat_standin import ChatStandIn, FixedAnswer

GOAL = 1.5
RPM = 100_000
SEQUENTIAL_TRACES = 64


def build(project, name: str, n: int):
    from django.db import transaction

    from traces.models import Batch, Step, Trace

    with transaction.atomic():
        batch = Batch.objects.create(name=name)
        project.batches.add(batch)
        traces = Trace.objects.bulk_create(
            Trace(
                batch=batch,
                external_id=f"{name}-{i}",
                content_hash=f"{name}-{i}",
                task="Find why the deployment keeps restarting",
                system="bench",
                outcome="failure",
                step_count=6,
            )
            for i in range(n)
        )
        Step.objects.bulk_create(
            Step(
                trace=trace,
                index=j,
                agent="sre" if j % 2 else "planner",
                kind="message",
                content=f"step {j}: kubectl get pods -n shop | grep CrashLoopBackOff (attempt {j})",
            )
            for trace in traces
            for j in range(6)
        )
    return batch


def timed_run(project, standin: ChatStandIn, n: int, concurrency: int) -> tuple[float, int]:
    """Seconds for one run of `n` fresh traces, and the most requests the stand-in saw at once."""
    from annotator.models import LLMConfig
    from annotator.services.llm.runs import do_process_run, do_start_run

    name = f"bench-{n}-c{concurrency}"
    build(project, name, n)
    LLMConfig.objects.filter(project=project).update(concurrency=concurrency)
    standin.reset()
    run = do_start_run(project, batch_name=name, enqueue=False)
    t0 = time.perf_counter()
    result = do_process_run(run.pk).run
    seconds = time.perf_counter() - t0
    if (result.status, result.done) != ("succeeded", n):
        raise SystemExit(
            f"run of {n} traces ended {result.status_label} with {result.done} labelled: {result.error}"
        )
    return seconds, standin.peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=1.0, help="Seconds the stand-in takes per request")
    parser.add_argument("--quick", action="store_true", help="64 traces only, without today's baseline")
    args = parser.parse_args()
    sizes = [64] if args.quick else args.traces

    setup_django()
    from django.conf import settings

    from annotator.models import LLMConfig, Project
    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="bench-llm", name="Bench LLM", taxonomy_version=resolve_version("mast")
    )
    rows, measured = [], {}
    with ChatStandIn(FixedAnswer(args.latency)) as standin:
        settings.LLM_ALLOWED_BASE_URLS = [standin.base_url]  # a local server, allowed for this bench only
        LLMConfig.objects.create(
            project=project,
            base_url=standin.base_url,
            model="bench-model",
            requests_per_minute=RPM,
            token_cap=0,
            timeout_seconds=30,
        )
        plan = [(n, args.concurrency) for n in sizes]
        if not args.quick:
            plan.insert(0, (SEQUENTIAL_TRACES, 1))
        for n, concurrency in plan:
            seconds, peak = timed_run(project, standin, n, concurrency)
            measured[(n, concurrency)] = seconds
            ideal = n / concurrency * args.latency
            floor = n / RPM * 60
            label = f"{n:,} traces, concurrency {concurrency}" + (
                " (today's one at a time)" if concurrency == 1 else ""
            )
            rows.append(
                (
                    label,
                    f"{seconds:.1f}",
                    f"{ideal:.1f}",
                    f"{seconds / ideal:.2f}x",
                    f"{floor:.2f} ({RPM:,}/min)",
                    f"{max(ideal, floor):.1f}",
                    str(peak),
                    f"{n / seconds:.1f}",
                )
            )
            print(f"  {label}: {seconds:.1f} s", flush=True)
    print()
    print(
        table(
            rows,
            (
                "run",
                "seconds",
                "ideal s (traces/conc x latency)",
                "vs ideal",
                "rate-limit floor s (traces/rpm)",
                "bound s (max of both)",
                "peak in flight",
                "traces/s",
            ),
        )
    )
    print(f"\nlatency {args.latency:g} s a request; the stand-in answers every request in its own thread.")
    sequential = measured.get((SEQUENTIAL_TRACES, 1))
    same = measured.get((SEQUENTIAL_TRACES, args.concurrency))
    if sequential and same:
        print(
            f"{SEQUENTIAL_TRACES} traces: {sequential:.1f} s one at a time, {same:.1f} s at concurrency "
            f"{args.concurrency} ({sequential / same:.1f}x faster)"
        )
    largest = max(sizes)
    seconds = measured[(largest, args.concurrency)]
    ratio = seconds / (largest / args.concurrency * args.latency)
    goal(
        f"LLM run of {largest:,} traces at concurrency {args.concurrency}, {args.latency:g} s a request",
        f"{ratio:.2f}x the ideal ({seconds:.1f} s)",
        f"<= {GOAL}x",
        ratio <= GOAL,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
