"""Split MAST/MAD raw trace logs into steps, one splitter per multi-agent framework.

MAST ships each trace as one string of framework log output (ChatDev, MetaGPT, AG2, AppWorld,
HyperAgent, OpenManus, Magentic-One), sometimes wrapped in a JSON or YAML document. Annotators
need per-speaker steps to pin evidence on, so each framework's speaker headers are matched
with a regex; anything unrecognised falls back to a generic splitter so that no text is lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._mast_logs import blocks, chatdev, clean, metagpt, openmanus
from ._util import text_of
from .limits import json_loads
from .records import TOOL_AGENT, StepRecord

FRAMEWORKS = ("ChatDev", "MetaGPT", "AG2", "AppWorld", "HyperAgent", "OpenManus", "Magentic-One")
_ALIASES = {
    "chatdev": "ChatDev",
    "metagpt": "MetaGPT",
    "ag2": "AG2",
    "autogen": "AG2",
    "appworld": "AppWorld",
    "hyperagent": "HyperAgent",
    "openmanus": "OpenManus",
    "manus": "OpenManus",
    "magentic": "Magentic-One",
    "magenticone": "Magentic-One",
    "magneticone": "Magentic-One",
}


def framework_of(*names: Any) -> str:
    """Canonical framework for the first name that is one (MAST swaps mas/benchmark names twice)."""
    for name in names:
        key = re.sub(r"[^a-z0-9]", "", str(name or "").lower())
        if key in _ALIASES:
            return _ALIASES[key]
    return ""


def guess_framework(text: str) -> str:
    """Recognise the framework from the log itself when the record's names do not say."""
    head = text[:20000]
    checks = (
        ("HyperAgent", r"HyperAgent_\S+ - \w+ - "),
        ("ChatDev", r"\*\*\[Preprocessing\]\*\*|ChatDev Starts"),
        ("AppWorld", r"Response from Supervisor Agent"),
        ("Magentic-One", r"^-{10} .*(MagenticOne|Orchestrator|WebSurfer).* -{10}$"),
        ("OpenManus", r"app\.agent\.\w+:\w+:\d+ - "),
        ("MetaGPT", r"MetaGPT Agent Communication Log|metagpt\.roles|\w+\(Simple\w+\): to do"),
        ("AG2", r'"?name"?\s*:\s*"?mathproxyagent|\bcontent:.*\n\s*role:'),
    )
    for name, pattern in checks:
        if re.search(pattern, head, re.MULTILINE):
            return name
    return ""


def split_trace(text: str, framework: str = "") -> tuple[list[StepRecord], dict, str]:
    """Return (steps, extracted metadata, framework used) for one raw MAST trace string."""
    meta: dict = {}
    inner = text
    doc = _load_wrapper(text)
    if isinstance(doc, dict):
        meta = {k: v for k, v in doc.items() if k not in ("trajectory", "content")}
        traj = doc.get("trajectory")
        if isinstance(traj, list) and traj and all(isinstance(m, dict) for m in traj):
            return _ag2_messages(traj), meta, framework or "AG2"
        if isinstance(traj, list):
            inner = "\n".join(text_of(x) for x in traj)
        elif isinstance(traj, str):
            inner = traj
        elif isinstance(doc.get("content"), str):
            inner = doc["content"]
    fw = framework or guess_framework(inner)
    splitter = _SPLITTERS.get(fw, _generic)
    steps = splitter(inner)
    if not steps:
        steps = _generic(inner)
    return steps, meta, fw


def _load_wrapper(text: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return json_loads(stripped, parse_constant=lambda _c: None)
        except ValueError:
            return None
    if re.match(r"(instance_id|run_id|problem_statement|trajectory):", stripped):
        try:
            import yaml

            return yaml.safe_load(stripped)
        except Exception:  # malformed YAML is just text to split
            return None
    return None


# --- AG2 ------------------------------------------------------------------------------------
def _ag2_messages(messages: list[dict]) -> list[StepRecord]:
    steps = []
    for m in messages:
        role = str(m.get("role") or "")
        steps.append(
            StepRecord(
                kind="message", content=text_of(m.get("content")), agent=str(m.get("name") or role), role=role
            )
        )
    return steps


_AG2_YAML = re.compile(r"^\s*-?\s*content:", re.MULTILINE)


def _ag2_text(text: str) -> list[StepRecord]:
    steps = []
    for m, body in blocks(text, _AG2_YAML):
        if m is None:
            continue
        role = re.search(r"^\s*role:\s*(.*)$", body, re.MULTILINE)
        name = re.search(r"^\s*name:\s*(.*)$", body, re.MULTILINE)
        content = re.split(r"^\s*role:\s*", body, maxsplit=1, flags=re.MULTILINE)[0].strip()
        r = role.group(1).strip() if role else ""
        steps.append(
            StepRecord(
                kind="message", content=clean(content), agent=name.group(1).strip() if name else r, role=r
            )
        )
    return steps


# --- AppWorld -------------------------------------------------------------------------------
_APPWORLD = re.compile(
    r"^( *)(Response from (.+?) (Agent|API)|Message to (.+?) Agent|Code Execution Output"
    r"|Entering (.+?) Agent message loop|Exiting (.+?) Agent message loop|Evaluation"
    r"|\*{10,} Task .* \*{10,})[ \t]*$",
    re.MULTILINE,
)


def _dedent(body: str, indent: int) -> str:
    pad = " " * (indent + 4)
    return clean(
        "\n".join(line[len(pad) :] if line.startswith(pad) else line.lstrip() for line in body.splitlines())
    )


def _appworld(text: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    top = None  # index of the last supervisor-level step: parent of nested agent turns
    for m, body in blocks(text, _APPWORLD):
        if m is None:
            steps.append(StepRecord(kind="observation", content=clean(body), agent="AppWorld"))
            continue
        indent, header = len(m.group(1)), m.group(2)
        if header.startswith(("Entering", "Exiting")):
            continue  # nesting is carried by `parent`
        parent = top if indent else None
        content = _dedent(body, indent)
        if header.startswith("*"):
            step = StepRecord(kind="message", content=clean(body), agent="user", role="user")
        elif m.group(3) and m.group(4) == "API":
            step = StepRecord(
                kind="tool_result", content=content, agent=TOOL_AGENT, role="tool", tool_name=m.group(3)
            )
        elif m.group(3):
            step = StepRecord(kind="message", content=content, agent=f"{m.group(3)} Agent", role="assistant")
        elif m.group(5):
            step = StepRecord(kind="message", content=content, agent="", role="user")
        elif header == "Code Execution Output":
            step = StepRecord(kind="observation", content=content, agent="environment", role="tool")
        else:  # Evaluation
            step = StepRecord(kind="observation", content=clean(body), agent="evaluator")
        step.parent = parent
        if not indent:
            top = len(steps)
        steps.append(step)
    return steps


# --- HyperAgent -----------------------------------------------------------------------------
_HYPER = re.compile(r"^[ \t-]*HyperAgent_\S+ - (\w+) - (.*)$", re.MULTILINE)


def _hyperagent(text: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    for m, body in blocks(text, _HYPER):
        if m is None:
            steps.append(StepRecord(kind="observation", content=clean(body), agent="HyperAgent"))
            continue
        level, rest = m.groups()
        resp = re.match(r"([\w\- ]+?)'s Response: ?(.*)$", rest)
        handoff = re.match(r"(\w+)->(\w+): ?(.*)$", rest)
        if resp:
            step = StepRecord(
                kind="message",
                content=clean(f"{resp.group(2)}\n{body}"),
                agent=resp.group(1),
                role="assistant",
            )
        elif handoff:
            step = StepRecord(
                kind="message",
                content=clean(f"{handoff.group(3)}\n{body}"),
                agent=handoff.group(1),
                role="assistant",
            )
        else:
            kind = "error" if level in ("ERROR", "CRITICAL") else "observation"
            step = StepRecord(kind=kind, content=clean(f"{rest}\n{body}"), agent="HyperAgent")
        steps.append(step)
    return steps


# --- Magentic-One ---------------------------------------------------------------------------
_MAGENTIC = re.compile(r"^-{10,} (?:\w+ \(([^)\n]+)\)|(\S+)) -{10,}$", re.MULTILINE)
_MARKER = re.compile(r"^[A-Z][A-Z_.]+ [^\n]*!#!#$", re.MULTILINE)


def _magentic(text: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    for m, body in blocks(text, _MAGENTIC):
        if m is None:
            steps.append(
                StepRecord(kind="observation", content=clean(_MARKER.sub("", body)), agent="environment")
            )
            continue
        agent = m.group(1) or m.group(2)
        role = "user" if agent == "user" else "assistant"
        steps.append(StepRecord(kind="message", content=clean(_MARKER.sub("", body)), agent=agent, role=role))
    return steps


# --- generic fallback -----------------------------------------------------------------------
_GENERIC_SPEAKER = re.compile(
    r"^\**([A-Z][\w .\-]{0,40}?)\**(?: \(to [^)\n]+\))?(?::| says:)\s*$", re.MULTILINE
)


def _generic(text: str) -> list[StepRecord]:
    """Speaker lines (``Name (to X):``) when there are some, else paragraphs, else one step."""
    parts = list(blocks(text, _GENERIC_SPEAKER))
    if sum(1 for m, _ in parts if m) >= 2:
        return [
            StepRecord(kind="message", content=clean(body), agent=m.group(1) if m else "")
            for m, body in parts
        ]
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if 1 < len(paragraphs) <= 500:
        return [StepRecord(kind="message", content=clean(p)) for p in paragraphs]
    return [StepRecord(kind="message", content=clean(text))] if text.strip() else []


_SPLITTERS: dict[str, Callable[[str], list[StepRecord]]] = {
    "ChatDev": chatdev,
    "MetaGPT": metagpt,
    "AG2": _ag2_text,
    "AppWorld": _appworld,
    "HyperAgent": _hyperagent,
    "OpenManus": openmanus,
    "Magentic-One": _magentic,
}
