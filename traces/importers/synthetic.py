"""Deterministic synthetic traces and per-format writers.

Tests, the demo and the benchmarks need plausible multi-agent traces of any size without
shipping third-party data; the writers render them in the formats that have no real sample
in the repository (OTLP, Codex rollouts, Inspect ``.eval`` archives, full MAD) so those
parsers are exercised end to end.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator

from ._writers import (
    MAST_CODES,
    otel_document,
    write_codex_rollout,
    write_inspect_eval,
    write_mast_full_json,
    write_openai_chat_jsonl,
    write_otel_json,
)
from .native import dump_native, write_native_jsonl
from .records import TOOL_AGENT, AnnotationRecord, LabelRecord, StepRecord, TraceRecord

MODELS = ("gpt-4o", "claude-3.5-sonnet", "qwen2.5-7b", "llama-3.1-70b")
BENCHMARKS = ("SWE-bench-lite", "GAIA", "tau-bench/airline", "ProgramDev", "GSM-Plus")
SYSTEMS = ("AG2", "MetaGPT", "ChatDev", "OpenHands")
TOOLS = ("run_python", "search_web", "read_file", "edit_file", "run_tests")
_TASKS = (
    "Fix the off-by-one error in pagination of the orders endpoint.",
    "How many studio albums did the band release between 2000 and 2009?",
    "Change the passenger name on reservation {code} and add one checked bag.",
    "Write a CLI todo app with add, list and done commands.",
    "A baker sells {a} loaves a day for {b} days; how many loaves in total?",
)

__all__ = [
    "otel_document",
    "synthetic_traces",
    "write_codex_rollout",
    "write_inspect_eval",
    "write_mast_full_json",
    "write_native_jsonl",
    "write_openai_chat_jsonl",
    "write_otel_json",
]


def synthetic_traces(n: int, steps: int = 20, seed: int = 0) -> Iterator[TraceRecord]:
    """Yield ``n`` planner/coder/verifier traces of ``steps`` steps each (deterministic per seed)."""
    rng = random.Random(seed)
    for i in range(n):
        yield _trace(rng, i, steps, seed)


def _trace(rng: random.Random, i: int, n_steps: int, seed: int) -> TraceRecord:
    task = rng.choice(_TASKS).format(
        code=f"{rng.randrange(16**6):06X}", a=rng.randint(3, 40), b=rng.randint(2, 9)
    )
    out: list[StepRecord] = [StepRecord(kind="message", content=task, agent="user", role="user")]
    t0 = 1_700_000_000 + i * 3600
    while len(out) < n_steps:
        r = rng.random()
        k = len(out)
        if r < 0.15:
            out.append(
                StepRecord(
                    kind="message",
                    content=f"Plan step {k}: split the task and delegate to coder.",
                    agent="planner",
                    role="assistant",
                )
            )
        elif r < 0.3:
            out.append(
                StepRecord(
                    kind="reasoning",
                    content=f"Step {k}: the last result looks {'fine' if rng.random() < 0.7 else 'wrong'}.",
                    agent="planner",
                    role="assistant",
                )
            )
        elif r < 0.7 and len(out) + 1 < n_steps:
            tool = rng.choice(TOOLS)
            call_id = f"call_{i}_{k}"
            out.append(
                StepRecord(
                    kind="tool_call",
                    agent="coder",
                    role="assistant",
                    tool_name=tool,
                    tool_args={"arg": rng.randint(0, 99), "path": f"src/m{k}.py"},
                    tool_call_id=call_id,
                    tokens=rng.randint(50, 900),
                )
            )
            if rng.random() < 0.12:
                out.append(
                    StepRecord(
                        kind="error",
                        content=f"Traceback: {tool} failed with exit code 1",
                        agent=TOOL_AGENT,
                        role="tool",
                        tool_name=tool,
                        tool_call_id=call_id,
                        parent=k,
                    )
                )
            else:
                out.append(
                    StepRecord(
                        kind="tool_result",
                        content=f"{tool} output line {rng.randint(1, 500)}",
                        agent=TOOL_AGENT,
                        role="tool",
                        tool_name=tool,
                        tool_call_id=call_id,
                        parent=k,
                        duration_ms=rng.randint(5, 4000),
                    )
                )
        elif r < 0.85:
            out.append(
                StepRecord(
                    kind="message",
                    content=f"Check of step {k}: {'tests pass' if rng.random() < 0.6 else 'tests fail'}.",
                    agent="verifier",
                    role="assistant",
                )
            )
        else:
            out.append(
                StepRecord(
                    kind="observation",
                    content=f"Environment state after step {k}: {rng.randint(0, 9)} files changed.",
                    agent="environment",
                )
            )
    out = out[:n_steps]
    for j, s in enumerate(out):
        s.timestamp = _iso(t0 + j * 7)
        if s.parent is not None and s.parent >= len(out):
            s.parent = None
    outcome = rng.choices(("success", "failure", "unknown"), weights=(4, 5, 1))[0]
    score = {"success": 1.0, "failure": 0.0}.get(outcome)
    annotations = []
    if outcome == "failure" and rng.random() < 0.5 and out:
        labels = [
            LabelRecord(
                mode=rng.choice(MAST_CODES), steps=[rng.randrange(len(out))], primary=True, note="synthetic"
            )
        ]
        annotations.append(AnnotationRecord(annotator=f"annotator_{rng.randint(1, 3)}", labels=labels))
    return TraceRecord(
        external_id=f"syn-{seed}-{i:06d}",
        steps=out,
        task=task,
        system=rng.choice(SYSTEMS),
        model=rng.choice(MODELS),
        benchmark=rng.choice(BENCHMARKS),
        outcome=outcome,
        score=score,
        metadata={"seed": seed, "index": i},
        annotations=annotations,
    )


def _iso(epoch: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def native_lines(records: Iterable[TraceRecord]) -> Iterator[str]:
    for rec in records:
        yield json.dumps(dump_native(rec), ensure_ascii=False)
