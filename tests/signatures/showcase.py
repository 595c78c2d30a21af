"""A richer deterministic project for the browser test and its screenshot: three models, two batches
(before/after an intervention), ten MAST modes at realistic rates, evidence steps across several agents."""

from __future__ import annotations

import numpy as np

from annotator.models import AdjudicationItem, GoldLabel, Project
from taxonomy.models import FailureMode
from tests.factories import BatchFactory
from traces.models import Step, Trace

MODELS = {"gpt-4o": 0.55, "claude-3.5-sonnet": 0.4, "llama-3-70b": 0.7}  # failure rates
AGENTS = ["planner", "coder", "executor", "verifier"]
# code: (rate in failed, rate in successful, where it usually shows: relative position 0..1)
MODES = {
    "FM-1.1": (0.18, 0.08, 0.15),
    "FM-1.3": (0.32, 0.27, 0.5),
    "FM-1.5": (0.22, 0.02, 0.85),
    "FM-2.2": (0.12, 0.05, 0.3),
    "FM-2.3": (0.15, 0.04, 0.45),
    "FM-2.6": (0.2, 0.1, 0.55),
    "FM-3.1": (0.17, 0.01, 0.9),
    "FM-3.2": (0.28, 0.12, 0.92),
    "FM-3.3": (0.35, 0.06, 0.95),
    "FM-1.4": (0.06, 0.04, 0.7),
}


def build_showcase(project: Project, n_per_batch_model: int = 40, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    modes = {m.code: m for m in FailureMode.objects.filter(version=project.taxonomy_version)}
    batches = {name: BatchFactory(name=name) for name in ("baseline-run", "after-verifier-fix")}
    project.batches.add(*batches.values())
    traces = []
    for batch_name, batch in batches.items():
        for model, failure_rate in MODELS.items():
            for i in range(n_per_batch_model):
                failed = rng.random() < failure_rate
                traces.append(
                    Trace(
                        batch=batch,
                        external_id=f"{batch_name}-{model}-{i}",
                        content_hash=f"{batch_name}-{model}-{i}",
                        model=model,
                        system="MetaGPT" if i % 3 else "AG2",
                        benchmark="ProgramDev" if i % 2 else "GAIA",
                        outcome="failure" if failed else "success",
                        step_count=int(rng.integers(12, 40)),
                    )
                )
    Trace.objects.bulk_create(traces)
    Step.objects.bulk_create(
        Step(trace=t, index=i, agent=AGENTS[(i + t.pk) % len(AGENTS)], content=f"step {i}")
        for t in traces
        for i in range(t.step_count)
    )
    items = AdjudicationItem.objects.bulk_create(
        AdjudicationItem(project=project, trace=t, status="agreed") for t in traces
    )
    gold = []
    for trace, item in zip(traces, items, strict=True):
        after_fix = trace.batch.name == "after-verifier-fix"
        for code, (rate_failed, rate_success, where) in MODES.items():
            rate = rate_failed if trace.outcome == "failure" else rate_success
            if after_fix and code.startswith("FM-3"):
                rate *= 0.45  # the intervention: a verifier step
            if trace.model == "llama-3-70b":
                rate *= 1.4
            if rng.random() < rate:
                step = int(np.clip(rng.normal(where, 0.12), 0, 0.999) * trace.step_count)
                gold.append(
                    GoldLabel(item=item, mode=modes[code], evidence=[{"step": step}], source="agreed")
                )
    GoldLabel.objects.bulk_create(gold)
