"""SWE-agent ``.traj`` files: one JSON object per run with ``trajectory[{thought, action,
observation, response, state, execution_time?}]``, ``history``, ``info`` and ``environment``.

Each trajectory entry becomes up to three steps: the thought (``reasoning``, skipped when
empty), the action (``tool_call``; tool name = first word of the command) and the observation
(``observation``, parent = the action, kept even when empty because "no output" is evidence).

Outcome rule: SWE-agent does not evaluate its patch, so ``exit_status`` "submitted" (including
"submitted (exit_cost)" autosubmissions) is ``unknown``. A boolean ``resolved`` (or a numeric
``score``/``reward``) in ``info`` decides when present, as written by SWE-bench evaluation
merges; a non-submitted exit (``exit_error``, ``exit_format``, ...) with no submission is a
``failure`` because nothing was produced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import BinaryIO

from ._json import first_char, has_key, load_single
from ._util import Ctx, as_float, as_int, compact, outcome_from_reward, text_of
from .limits import json_loads
from .records import StepRecord, TraceRecord

FORMAT = "swe_agent"
LABEL = "SWE-agent trajectory (.traj)"

_SWE_BENCH_ID = re.compile(r"^[\w.-]+__[\w.-]+-\d+$")


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "{":
        return False
    if filename.endswith(".traj"):
        return True
    return (
        has_key(head, "trajectory")
        and has_key(head, "action", "observation")
        and not has_key(head, "mas_name")
    )


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    ctx = Ctx(filename, record=1)
    d = ctx.obj(load_single(stream, filename))
    yield build(d, ctx, PurePath(filename).stem)


def outcome_of(info: dict) -> tuple[str, float | None]:
    if isinstance(info.get("resolved"), bool):
        return ("success" if info["resolved"] else "failure"), (1.0 if info["resolved"] else 0.0)
    for key in ("score", "reward"):
        if as_float(info.get(key)) is not None:
            return outcome_from_reward(info[key])
    status = str(info.get("exit_status") or "")
    if status and not status.startswith("submitted") and not info.get("submission"):
        return "failure", None
    return "unknown", None


def _model(d: dict) -> str:
    rc = d.get("replay_config")
    if isinstance(rc, str):
        try:
            rc = json_loads(rc)
        except ValueError:
            rc = None
    if isinstance(rc, dict):
        agent = rc.get("agent") if isinstance(rc.get("agent"), dict) else {}
        model = agent.get("model") if isinstance(agent.get("model"), dict) else {}
        if isinstance(model.get("name"), str):
            return model["name"]
    return ""


def _task(history: list) -> str:
    # The first non-demonstration user turn carries the issue / problem statement.
    for h in history:
        if isinstance(h, dict) and h.get("role") == "user" and not h.get("is_demo"):
            return text_of(h.get("content"))
    return ""


def build(d: dict, ctx: Ctx, stem: str) -> TraceRecord:
    traj = ctx.get(d, "trajectory", list, "trajectory", required=True)
    steps: list[StepRecord] = []
    for i, e in enumerate(traj):
        # A value of the expected type is taken as it is; anything else goes through the checks that name
        # the field (a run has thousands of entries, and their paths are only needed for an error).
        if type(e) is not dict:
            ctx.obj(e, f"trajectory[{i}]")
        thought = e.get("thought")
        if type(thought) is not str:
            thought = ctx.text(e, "thought", f"trajectory[{i}].thought")
        action = e.get("action")
        if type(action) is not str:
            action = ctx.text(e, "action", f"trajectory[{i}].action")
        secs = e.get("execution_time")
        if secs is not None:
            secs = as_float(secs)
        if thought.strip():
            steps.append(StepRecord(kind="reasoning", content=thought, agent="SWE-agent", role="assistant"))
        call = len(steps)
        words = action.split(None, 1)
        steps.append(
            StepRecord(
                kind="tool_call",
                content=action,
                agent="SWE-agent",
                role="assistant",
                tool_name=words[0] if words else "",
                duration_ms=int(secs * 1000) if secs is not None else None,
            )
        )
        steps.append(
            StepRecord(
                kind="observation",
                content=text_of(e.get("observation")),
                agent="environment",
                role="tool",
                parent=call,
            )
        )
    info = ctx.get(d, "info", dict, "info") or {}
    history = d.get("history") if isinstance(d.get("history"), list) else []
    outcome, score = outcome_of(info)
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    meta = compact(
        {
            "environment": d.get("environment"),
            "exit_status": info.get("exit_status"),
            "submission": info.get("submission"),
            "model_stats": stats,
            "tokens_sent": as_int(stats.get("tokens_sent")),
            "tokens_received": as_int(stats.get("tokens_received")),
        }
    )
    return TraceRecord(
        external_id=stem,
        steps=steps,
        task=_task(history),
        system="SWE-agent",
        model=_model(d),
        benchmark="SWE-bench" if _SWE_BENCH_ID.match(stem) else "",
        outcome=outcome,
        score=score,
        metadata=meta,
        raw=d,
        record_no=1,
    )
