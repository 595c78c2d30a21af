"""Who&When failure-attribution logs (Zhang et al., ICML 2025): one JSON object per file with
``history[{content, role, name?}]``, ``question``, ``ground_truth``, ``mistake_agent``,
``mistake_step`` (a string holding a 0-based history index), ``mistake_reason``.

Every file is a failed run, so the outcome is ``failure`` unless ``is_correct``/``is_corrected``
says otherwise. The human attribution becomes one annotation (mode ``decisive-error`` pinned on
the mistake step) and is also copied to metadata so it survives even without annotations.
The external id is ``<subset>/<file stem>`` (file numbers repeat across the Hand-Crafted and
Algorithm-Generated subsets); the subset comes from the path, else from the subset's own fields.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any, BinaryIO

from ._json import first_char, has_key, load_single
from ._util import Ctx, as_int, compact, text_of
from .records import AnnotationRecord, LabelRecord, StepRecord, TraceRecord

FORMAT = "who_and_when"
LABEL = "Who&When failure attribution (one JSON file per trace)"
MODE = "decisive-error"
ANNOTATOR = "who_and_when"
SUBSETS = ("Hand-Crafted", "Algorithm-Generated")

_QUALIFIED = re.compile(r"^(.*?)\s*\(([^)]*)\)\s*$")


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "{":
        return False
    if has_key(head, "mistake_agent") or has_key(head, "mistake_step"):
        return True
    # Hand-Crafted files start with a long history; the attribution keys may be past the head.
    return bool(re.match(rb'\s*\{\s*"history"\s*:\s*\[\s*\{\s*"content"\s*:', head)) and has_key(head, "role")


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    ctx = Ctx(filename, record=1)
    d = ctx.obj(load_single(stream, filename))
    yield build(d, ctx, filename)


def _history(d: dict, ctx: Ctx) -> list:
    history = d.get("history")
    if isinstance(history, str):
        # Some Algorithm-Generated copies store the history as a Python repr string.
        try:
            history = ast.literal_eval(history)
        except (ValueError, SyntaxError):
            raise ctx.error("history", "expected a list of messages, got an unparseable string") from None
    if history is None:
        raise ctx.error("history", "required field is missing")
    if not isinstance(history, list):
        raise ctx.error("history", f"expected a list of messages, got {type(history).__name__}")
    return history


def _step(ctx: Ctx, raw: Any, i: int) -> StepRecord:
    m = ctx.obj(raw, f"history[{i}]")
    role = ctx.text(m, "role", f"history[{i}].role")
    name = ctx.text(m, "name", f"history[{i}].name")
    content = text_of(m.get("content"))
    kind = "message"
    chat_role = role if role in ("system", "user", "assistant", "tool") else ""
    agent = name
    if not agent:
        # Hand-Crafted logs put the speaker in `role`, sometimes qualified:
        # "Orchestrator (thought)", "Orchestrator (-> WebSurfer)".
        q = _QUALIFIED.match(role)
        agent = q.group(1) if q else role
        if q and q.group(2).strip() == "thought":
            kind = "reasoning"
        chat_role = "user" if role == "human" else "assistant"
    if agent in ("Computer_terminal", "ComputerTerminal"):
        kind = "observation"
    return StepRecord(kind=kind, content=content, agent=agent, role=chat_role)


def _subset(filename: str, d: dict) -> str:
    """Subset folder from the path; failing that (an upload keeps only the file name) from the
    fields that differ between the two subsets, because file numbers repeat across subsets."""
    parts = PurePath(filename).parts
    found = next((p for p in reversed(parts[:-1]) if p in SUBSETS), "")
    if found:
        return found
    if "is_correct" in d or "system_prompt" in d:
        return "Algorithm-Generated"
    return "Hand-Crafted" if "is_corrected" in d else ""


def build(d: dict, ctx: Ctx, filename: str) -> TraceRecord:
    history = _history(d, ctx)
    steps = [_step(ctx, m, i) for i, m in enumerate(history)]
    subset = _subset(filename, d)
    stem = PurePath(filename).stem
    raw_step = d.get("mistake_step")
    step_no = as_int(raw_step)
    if raw_step not in (None, "") and (step_no is None or not 0 <= step_no < len(steps)):
        raise ctx.error("mistake_step", f"expected a history index 0..{len(steps) - 1}, got {raw_step!r}")
    agent = text_of(d.get("mistake_agent"))
    reason = text_of(d.get("mistake_reason"))
    annotations = []
    if agent or step_no is not None:
        label = LabelRecord(
            mode=MODE,
            steps=[step_no] if step_no is not None else [],
            primary=True,
            note=f"{agent}: {reason}",
            attribution={"agent": agent, "step": step_no, "reason": reason},
        )
        annotations.append(AnnotationRecord(annotator=ANNOTATOR, labels=[label]))
    correct = d.get("is_correct", d.get("is_corrected"))
    level = d.get("level")
    level_s = str(level) if level is not None else ""
    benchmark = "GAIA" if level_s in ("1", "2", "3") else ("AssistantBench" if level_s else "")
    system = {"Hand-Crafted": "Magentic-One", "Algorithm-Generated": "CaptainAgent (AG2)"}.get(subset, "")
    if not system:
        system = "CaptainAgent (AG2)" if any(isinstance(m, dict) and m.get("name") for m in history) else ""
    meta = compact(
        {
            "subset": subset,
            "question_ID": d.get("question_ID"),
            "level": level,
            "ground_truth": d.get("ground_truth"),
            "mistake_agent": agent,
            "mistake_step": step_no,
            "mistake_reason": reason,
            "mistake_type": d.get("mistake_type"),
            "labels": d.get("labels"),
            "system_prompt": d.get("system_prompt"),
        }
    )
    return TraceRecord(
        external_id=f"{subset}/{stem}" if subset else stem,
        steps=steps,
        task=text_of(d.get("question")),
        system=system,
        benchmark=benchmark,
        outcome="success" if correct is True else "failure",
        metadata=meta,
        raw=d,
        annotations=annotations,
        record_no=1,
    )
