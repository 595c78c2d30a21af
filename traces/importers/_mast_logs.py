"""Splitters for the MAST frameworks that write timestamped log lines: ChatDev, MetaGPT and
OpenManus (see :mod:`mast_split` for the dispatcher and the chat-shaped frameworks).

Kept apart from :mod:`mast_split` only to keep each module readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ._util import maybe_json
from .records import TOOL_AGENT, StepRecord


def blocks(text: str, header: re.Pattern[str]) -> Iterator[tuple[re.Match[str] | None, str]]:
    """(header match or None for the preamble, body text up to the next header)."""
    matches = list(header.finditer(text))
    pre = text[: matches[0].start()] if matches else text
    if pre.strip():
        yield None, pre
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        yield m, text[m.end() : end].lstrip("\n")


def clean(s: str) -> str:
    return s.strip("\n").rstrip()


# --- ChatDev ---------------------------------------------------------------------------------
_CHATDEV = re.compile(r"^\[(\d{4})-(\d{2})-(\d{2}) (\d{2}:\d{2}:\d{2}) (\w+)\] ?(.*)$", re.MULTILINE)
_CHATDEV_NOISE = re.compile(r"flask app\.py did not start|HTTP Request: |\*\*\[OpenAI_Usage_Info")
_SPEAKER = re.compile(r"^([A-Z][A-Za-z ]{1,40}?): (.*)$", re.DOTALL)


def chatdev(text: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    tokens: int | None = None
    for m, body in blocks(text, _CHATDEV):
        if m is None:
            steps.append(StepRecord(kind="observation", content=clean(body), agent="ChatDev"))
            continue
        year, mid, last, clock, level, rest = m.groups()
        # ChatDev logs dates as %Y-%d-%m; fall back to %Y-%m-%d when the middle cannot be a day.
        day, month = (mid, last) if int(last) <= 12 else (last, mid)
        ts = f"{year}-{month}-{day}T{clock}"
        if _CHATDEV_NOISE.search(rest):
            usage = re.search(r"total_tokens: (\d+)", body)
            if usage:
                tokens = (tokens or 0) + int(usage.group(1))
            continue
        content = clean(f"{rest}\n{body}")
        sp = _SPEAKER.match(rest)
        if level in ("ERROR", "CRITICAL"):
            step = StepRecord(kind="error", content=content, agent="ChatDev", timestamp=ts)
        elif sp and sp.group(1) == "System":
            step = StepRecord(
                kind="observation",
                content=clean(f"{sp.group(2)}\n{body}"),
                agent="System",
                role="system",
                timestamp=ts,
            )
        elif sp:
            step = StepRecord(
                kind="message",
                content=clean(f"{sp.group(2)}\n{body}"),
                agent=sp.group(1),
                role="assistant",
                timestamp=ts,
                tokens=tokens,
            )
            tokens = None
        else:
            step = StepRecord(kind="observation", content=content, agent="ChatDev", timestamp=ts)
        steps.append(step)
    return steps


# --- loguru lines (MetaGPT, OpenManus) -------------------------------------------------------
_LOGURU = re.compile(
    r"^(?:[^\n|]*?: )?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d+)? \| (\w+)\s*\| (\S+) - (.*)$",
    re.MULTILINE,
)


def metagpt(text: str) -> list[StepRecord]:
    if "NEW MESSAGES:" in text or "FROM: " in text:
        return _metagpt_comm(text)
    steps: list[StepRecord] = []
    for m, body in blocks(text, _LOGURU):
        if m is None:
            steps.append(StepRecord(kind="observation", content=clean(body), agent="MetaGPT"))
            continue
        ts, level, _where, msg = m.groups()
        who = re.match(r"(\w+\(\w+\)): (.*)$", msg)
        kind = "error" if level in ("ERROR", "CRITICAL") else ("message" if who else "observation")
        agent = who.group(1) if who else "MetaGPT"
        content = clean(f"{who.group(2) if who else msg}\n{body}")
        steps.append(
            StepRecord(
                kind=kind,
                content=content,
                agent=agent,
                role="assistant" if who else "",
                timestamp=ts.replace(" ", "T"),
            )
        )
    return steps


_METAGPT_COMM = re.compile(
    r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\] (FROM: (\S+) TO: .*|NEW MESSAGES:)$", re.MULTILINE
)


def _metagpt_comm(text: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    for m, body in blocks(text, _METAGPT_COMM):
        body = re.sub(r"\n-{20,}\s*(\n=== .* ===\s*)?$", "", body.rstrip())
        if m is None:
            continue  # the "=== ... Started ===" banner only
        ts = m.group(1).replace(" ", "T")
        if m.group(3):
            content = body.split("CONTENT:\n", 1)[-1]
            steps.append(
                StepRecord(
                    kind="message", content=clean(content), agent=m.group(3), role="user", timestamp=ts
                )
            )
            continue
        sp = re.match(r"\s*(\w+): ?(.*)$", body, re.DOTALL)
        agent, content = (sp.group(1), sp.group(2)) if sp else ("MetaGPT", body)
        steps.append(
            StepRecord(kind="message", content=clean(content), agent=agent, role="assistant", timestamp=ts)
        )
    return steps


_MANUS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(p, re.DOTALL))
    for name, p in (
        ("tokens", r"Token usage: .*?\bTotal=(\d+)"),
        ("skip", r"Executing step \d+/\d+|🛠️ \w+ selected \d+ tools"),
        ("thought", r"✨ (\w+)'s thoughts: ?(.*)"),
        ("prepare", r"🧰 Tools being prepared: (.*)"),
        ("args", r"🔧 Tool arguments: (.*)"),
        ("activate", r"🔧 Activating tool: '([^']+)'"),
        ("result", r"🎯 Tool '([^']+)' completed its mission! Result: ?(.*)"),
    )
)


def openmanus(text: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    tokens: int | None = None
    agent = "Manus"
    pending_args: list[Any] = []
    last_call: dict[str, int] = {}
    for m, body in blocks(text, _LOGURU):
        if m is None:
            steps.append(StepRecord(kind="observation", content=clean(body), agent="OpenManus"))
            continue
        ts, level, where, msg = m.groups()
        ts = ts.replace(" ", "T")
        full = clean(f"{msg}\n{body}")
        kind, hit = next(((k, p.match(full)) for k, p in _MANUS_PATTERNS if p.match(full)), ("", None))
        if kind == "tokens":
            tokens = int(hit.group(1))
        elif kind in ("skip", "prepare"):
            continue
        elif kind == "thought":
            agent = hit.group(1)
            steps.append(
                StepRecord(
                    kind="reasoning",
                    content=hit.group(2).strip(),
                    agent=agent,
                    role="assistant",
                    timestamp=ts,
                    tokens=tokens,
                )
            )
            tokens = None
        elif kind == "args":
            pending_args.append(maybe_json(hit.group(1).strip()))
        elif kind == "activate":
            name = hit.group(1)
            last_call[name] = len(steps)
            args = pending_args.pop(0) if pending_args else None
            steps.append(
                StepRecord(
                    kind="tool_call",
                    agent=agent,
                    role="assistant",
                    tool_name=name,
                    tool_args=args,
                    timestamp=ts,
                    tokens=tokens,
                )
            )
            tokens = None
        elif kind == "result":
            name = hit.group(1)
            steps.append(
                StepRecord(
                    kind="tool_result",
                    content=hit.group(2).strip(),
                    agent=TOOL_AGENT,
                    role="tool",
                    tool_name=name,
                    timestamp=ts,
                    parent=last_call.get(name),
                )
            )
        else:
            err = level in ("ERROR", "CRITICAL", "WARNING")
            steps.append(
                StepRecord(
                    kind="error" if err else "observation",
                    content=full,
                    agent=where.split(":")[0],
                    timestamp=ts,
                )
            )
    return steps
