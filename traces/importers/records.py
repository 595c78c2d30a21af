"""Plain records that every importer produces.

They carry no Django or database dependency so the parsers can be tested, benchmarked and
reused (CLI, demo data, exports) without a configured project.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STEP_KINDS = ("message", "reasoning", "tool_call", "tool_result", "observation", "error")
OUTCOMES = ("success", "failure", "unknown")
# The agent of every tool result, whatever the format: the tool is not one of the system's agents, and
# naming each tool as an agent would split a "by agent" figure into one bar per tool.
TOOL_AGENT = "tool"


@dataclass(slots=True)
class StepRecord:
    kind: str  # one of STEP_KINDS
    content: str = ""
    # Agent / speaker name (e.g. "Orchestrator", "WebSurfer", "assistant"). A tool's answer (a tool_result,
    # or an error a tool returned) is spoken by TOOL_AGENT in every format; which tool is in tool_name.
    agent: str = ""
    role: str = ""  # chat role if any: system/user/assistant/tool
    tool_name: str = ""
    tool_args: Any = None  # JSON-able (dict/list/str) or None
    tool_call_id: str = ""
    timestamp: str | None = None  # ISO 8601 string when known
    parent: int | None = None  # index (in this trace's step list) of the parent step, for nested spans
    tokens: int | None = None  # total tokens if known
    duration_ms: int | None = None


@dataclass(slots=True)
class LabelRecord:
    mode: str  # mode code or name exactly as in the source (mapping to a taxonomy happens later)
    steps: list[int] = field(default_factory=list)  # 0-based step indices pinned as evidence
    primary: bool = False
    note: str = ""
    # A failure attribution as the source gave it (Who&When): {"agent": who was held responsible, "step":
    # the decisive step's index or None, "reason": why}. Kept as data, not folded into the note, so the
    # analysis can count by the attributed agent and a contradiction with the step's own agent is visible.
    attribution: dict | None = None


@dataclass(slots=True)
class AnnotationRecord:
    annotator: str
    labels: list[LabelRecord] = field(default_factory=list)
    ambiguous: bool = False
    no_failure: bool = False  # only when the rater said so
    note: str = ""
    # Modes the source has no value for (MAST's NaN votes): missing, never "not chosen".
    missing: list[str] = field(default_factory=list)


@dataclass(slots=True)
class TraceRecord:
    external_id: str
    steps: list[StepRecord]
    task: str = ""
    system: str = ""  # agent system / framework, e.g. "AG2", "SWE-agent", "OpenHands"
    model: str = ""
    benchmark: str = ""
    outcome: str = "unknown"  # success | failure | unknown
    score: float | None = None
    metadata: dict = field(default_factory=dict)
    raw: Any = None  # the original record (JSON-able), kept for lossless export
    annotations: list[AnnotationRecord] = field(default_factory=list)
    record_no: int = 0  # 1-based position of the record in its file (for error messages)
    line_no: int | None = field(default=None, compare=False)  # its line in line-based files (JSONL)
    # `raw` as JSON text, serialised once when the record is measured (importers.guarded) and stored as is.
    raw_json: bytes | None = field(default=None, compare=False, repr=False)


class TraceFormatError(ValueError):
    """Names the file, the record (1-based number or line) and the field, so users can fix their data."""

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        record: int | None = None,
        line: int | None = None,
        field: str = "",
    ) -> None:
        self.message = message
        self.file = file
        self.record = record
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where: list[str] = []
        if self.file:
            where.append(self.file)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.record is not None and self.line is None:
            where.append(f"record {self.record}")
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def __str__(self) -> str:
        return self._render()
