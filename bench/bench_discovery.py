"""Discovery over 1,000 traces against a stand-in model that answers each request after a fixed latency: does
every phase keep `concurrency` requests in flight, so the run's time is the model's latency divided by the
concurrency?

    python bench/bench_discovery.py [--traces 1000] [--concurrency 16] [--latency 1.0] [--quick]

Uses its own throwaway database (bench/_setup.py) and the deterministic discovery stand-in of the tests
(tests/discovery/standin.py: analyses, namings and gate answers read from what the synthetic traces plant),
on 127.0.0.1, allowed for this run only. The run goes the real path (`do_start_discovery` +
`do_process_discovery`: prompts from the database, the HTTP client with its rate limiter, every answer parsed
and stored, TF-IDF grouping, consolidation, the gate's statistics) and is compared with its ideal: the sum
over its phases of ceil(requests / concurrency) x latency (a phase waits for the previous one: the namings
need every analysis, the gate every candidate). The rate limit is set high enough not to bind. scikit-learn
is imported before the clock starts (a worker pays that once, not per run); its time is printed.

Goal: 1,000 traces at concurrency 16 within 1.5x of the ideal.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import goal, setup_django, table

GOAL = 1.5
RPM = 100_000
RATERS = ["rater-a", "rater-b", "rater-c"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=1.0, help="Seconds the stand-in takes per request")
    parser.add_argument("--quick", action="store_true", help="200 traces")
    args = parser.parse_args()
    n = 200 if args.quick else args.traces

    setup_django()
    from django.conf import settings

    from annotator.access import ProjectAccess
    from annotator.discovery.process import do_process_discovery
    from annotator.discovery.service import do_start_discovery
    from annotator.discovery.synthetic import planted_traces, store_traces
    from annotator.models import DiscoveryAnswer, LLMConfig, Project, Role
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from tests.discovery.standin import DiscoveryModel, DiscoveryStandIn
    from traces.models import Batch

    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="bench-discovery", name="Bench discovery", taxonomy_version=resolve_version("mast")
    )
    batch = Batch.objects.create(name="synthetic")
    project.batches.add(batch)
    store_traces(batch, planted_traces(n, per_pattern=max(12, n // 20), seed=1))
    access = ProjectAccess(user=None, project=project, roles=frozenset({Role.OWNER}))
    gate_sample = min(100, n // 5)
    with DiscoveryStandIn(DiscoveryModel(latency=args.latency)) as standin:
        settings.LLM_ALLOWED_BASE_URLS = [standin.base_url]
        LLMConfig.objects.create(
            project=project,
            base_url=standin.base_url,
            model="bench-model",
            requests_per_minute=RPM,
            concurrency=args.concurrency,
            token_cap=0,
            timeout_seconds=30,
        )
        run = do_start_discovery(
            access,
            scope="batch:synthetic",
            raters=RATERS,
            sample=n - gate_sample,
            gate_sample=gate_sample,
            enqueue=False,
        )
        # A worker imports scikit-learn (and scipy) once, not once a run: the import is timed on its own.
        t_import = time.perf_counter()
        from annotator.discovery.induce import group_vectors, tfidf_vectors

        group_vectors(tfidf_vectors(["warm up one", "warm up two", "warm up three"]))
        imported = time.perf_counter() - t_import
        t0 = time.perf_counter()
        run = do_process_discovery(run.pk)
        seconds = time.perf_counter() - t0
        peak = standin.peak
    if run.status != "succeeded":
        raise SystemExit(f"discovery ended {run.status_label}: {run.error}")
    phases = {phase: run.answers.filter(phase=phase).count() for phase, _ in DiscoveryAnswer.Phase.choices}
    spans = {}
    for phase in phases:
        stamps = sorted(run.answers.filter(phase=phase).values_list("created_at", flat=True))
        if stamps:
            spans[phase] = f"{(stamps[-1] - stamps[0]).total_seconds():.1f} s first to last answer"
    print(f"run {(run.finished_at - run.started_at).total_seconds():.1f} s; {spans}")
    ideal = sum(math.ceil(count / args.concurrency) * args.latency for count in phases.values())
    requests = sum(phases.values())
    rows = [
        (
            f"{n:,} traces ({phases['analyse']:,} analysed, {len(run.held_ids)} gated x {len(RATERS)} raters)",
            f"{requests:,}",
            f"{seconds:.1f}",
            f"{ideal:.1f}",
            f"{seconds / ideal:.2f}x",
            str(peak),
            ", ".join(c["code"] for c in run.candidates),
        )
    ]
    print(table(rows, ("run", "requests", "seconds", "ideal s", "vs ideal", "peak in flight", "candidates")))
    print(f"\nlatency {args.latency:g} s a request, concurrency {args.concurrency}; phases: {phases}")
    print(f"scikit-learn's first import in this process (once per worker, outside the run): {imported:.1f} s")
    goal(
        f"discovery over {n:,} traces at concurrency {args.concurrency}, {args.latency:g} s a request",
        f"{seconds / ideal:.2f}x the ideal ({seconds:.1f} s)",
        f"<= {GOAL}x",
        seconds / ideal <= GOAL,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
