"""The benchmark's input files: the project's synthetic traces (seeded) written in the formats users import."""

from __future__ import annotations

import json
from pathlib import Path


def write_format(fmt: str, dest: Path, *, n: int, steps: int, seed: int) -> Path:
    """Write `n` synthetic traces of about `steps` steps in `fmt`; returns the file or folder to import."""
    from traces.importers.synthetic import synthetic_traces, write_native_jsonl, write_openai_chat_jsonl

    records = synthetic_traces(n, steps=steps, seed=seed)
    if fmt == "native":
        path = dest.with_suffix(".jsonl")
        write_native_jsonl(records, path)
        return path
    if fmt == "openai_chat":
        path = dest.with_suffix(".jsonl")
        write_openai_chat_jsonl(records, path)
        return path
    if fmt == "swe_agent":
        dest.mkdir(parents=True, exist_ok=True)
        for rec in records:
            (dest / f"{rec.external_id}.traj").write_text(
                json.dumps(_swe_agent(rec, steps)), encoding="utf-8"
            )
        return dest
    raise ValueError(f"no benchmark writer for {fmt}")


def _swe_agent(rec, steps: int) -> dict:
    """A SWE-agent run whose trajectory yields about `steps` steps (thought, action, observation per entry)."""
    texts = [s.content or json.dumps(s.tool_args) for s in rec.steps]
    entries = []
    for i in range(0, max(3, steps), 3):
        thought, action, observation = (texts[(i + k) % len(texts)] for k in range(3))
        entries.append(
            {
                "thought": thought,
                "action": f"edit src/m{i}.py {action[:40]}",
                "observation": observation,
                "response": thought,
                "state": "{}",
                "execution_time": 0.25,
            }
        )
    return {
        "environment": "swe_main",
        "trajectory": entries,
        "history": [{"role": "user", "content": rec.task}],
        "info": {
            "exit_status": "submitted",
            "submission": "diff --git a/x b/x",
            "model_stats": {"tokens_sent": 10},
        },
    }
