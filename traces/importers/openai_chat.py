"""OpenAI chat transcripts: ``{"messages": [...]}`` objects (JSONL or a JSON array) and
tau-bench result files (a JSON array of ``{task_id, reward, info, traj, trial}``).

Both are "a list of chat messages plus a little metadata"; tau-bench just names the list
``traj`` and adds a reward, which becomes the outcome (reward >= 1 -> success).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePath
from typing import Any, BinaryIO

from ._chat import chat_steps, first_text
from ._json import first_char, first_line, has_key, iter_array, iter_jsonl, peek
from ._util import Ctx, compact, outcome_from_reward, text_of
from .records import OUTCOMES, TraceRecord

FORMAT = "openai_chat"
LABEL = "OpenAI chat messages (JSONL / JSON array, tau-bench results)"

_ID_KEYS = ("id", "conversation_id", "trace_id", "sample_id", "uuid")
_USED_KEYS = {"messages", "model", "task", "prompt", "benchmark", "system", "outcome", "score", "reward"}


def sniff(head: bytes, filename: str) -> bool:
    c = first_char(head)
    if c == "[":
        if has_key(head, "task_id", "reward") and (has_key(head, "traj") or has_key(head, "info")):
            return True
        return has_key(head, "messages", "role") and not has_key(head, "mas_name")
    if c == "{":
        obj = first_line(head)
        if isinstance(obj, dict):
            return isinstance(obj.get("messages"), list) and "steps" not in obj
        first = head.lstrip().split(b"\n", 1)[0]
        return has_key(first, "messages", "role")
    return False


def splits_by_line(head: bytes) -> bool:
    """JSONL (not a JSON array): every line is a trace, so an import may hand pieces of the file to worker
    processes."""
    return first_char(head) != "["


def parse(
    stream: BinaryIO, filename: str, *, first_line: int = 1, first_record: int = 1, checked: bool = False
) -> Iterator[TraceRecord]:
    """`first_line`, `first_record`: the numbers of the stream's first line and trace (a piece of a JSONL
    file; a trace without an id is named by its number in the whole file); `checked`: see native.parse."""
    stem = PurePath(filename).stem
    head, stream = peek(stream)
    if first_char(head) == "[":
        for n, obj in iter_array(stream, filename):
            yield _record(obj, Ctx(filename, record=n), n, stem)
    else:
        lines = iter_jsonl(stream, filename, first_line, checked=checked)
        for n, (line_no, obj) in enumerate(lines, start=first_record):
            record = _record(obj, Ctx(filename, record=n, line=line_no), n, stem)
            record.line_no = line_no
            yield record


def _record(obj: Any, ctx: Ctx, n: int, stem: str) -> TraceRecord:
    d = ctx.obj(obj)
    if "traj" in d and "messages" not in d:
        return _tau_bench(d, ctx, n)
    messages = ctx.get(d, "messages", list, "messages", required=True)
    steps = chat_steps(messages, ctx, "messages")
    ext = next(
        (d[k] for k in _ID_KEYS if isinstance(d.get(k), str | int) and not isinstance(d.get(k), bool)), None
    )
    outcome = d.get("outcome") if d.get("outcome") in OUTCOMES else "unknown"
    score = None
    if outcome == "unknown":
        outcome, score = outcome_from_reward(d.get("reward", d.get("score")))
    meta = compact({k: v for k, v in d.items() if k not in _USED_KEYS and k not in _ID_KEYS})
    return TraceRecord(
        external_id=str(ext) if ext is not None else f"{stem}-{n}",
        steps=steps,
        task=text_of(d.get("task") or d.get("prompt")) or first_text(messages, "user"),
        system=d.get("system") if isinstance(d.get("system"), str) else "",
        model=d.get("model") if isinstance(d.get("model"), str) else "",
        benchmark=d.get("benchmark") if isinstance(d.get("benchmark"), str) else "",
        outcome=outcome,
        score=score,
        metadata=meta,
        raw=obj,
        record_no=n,
    )


def _tau_bench(d: dict, ctx: Ctx, n: int) -> TraceRecord:
    task_id = ctx.get(d, "task_id", (int, str), "task_id", required=True)
    trial = ctx.get(d, "trial", (int, str), "trial")
    traj = ctx.get(d, "traj", list, "traj", required=True)
    info = ctx.get(d, "info", dict, "info") or {}
    reward = ctx.get(d, "reward", (int, float), "reward")
    outcome, score = outcome_from_reward(reward)
    task = info.get("task") if isinstance(info.get("task"), dict) else {}
    model = next(
        (info[k] for k in ("model", "model_name", "agent_model") if isinstance(info.get(k), str)), ""
    )
    return TraceRecord(
        external_id=f"{task_id}-{trial if trial is not None else 0}",
        steps=chat_steps(traj, ctx, "traj"),
        task=text_of(task.get("instruction")) or first_text(traj, "user"),
        model=model,
        benchmark="tau-bench",
        outcome=outcome,
        score=score,
        metadata=compact({"task_id": task_id, "trial": trial, "info": info}),
        raw=d,
        record_no=n,
    )
