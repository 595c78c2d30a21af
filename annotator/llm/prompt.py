"""Build the chat messages that ask a model to label one trace with one taxonomy version. Pure: no Django.

Layout, and why:

- system message = the project's instructions (versioned, editable), then every failure mode (code, name,
  definition, guidance), then the answer contract. It is identical for every trace of a run, so servers with
  prefix caching (vLLM, OpenAI) reuse it and the per-trace cost is the trace alone.
- user message = the trace: task, outcome and the steps numbered by their own index (the numbers the model
  must cite as evidence), each with agent, kind and tool. Content beyond the character budget is cut in the
  middle, always with an explicit "[... 12,345 characters truncated ...]" marker, so the model knows something
  is missing and never mistakes a cut for the end: first inside an oversized step, then whole steps from the
  middle of the trace (the start, with the task set-up, and the end, where failures surface, are kept).
  Cutting whole steps is the "cut" option for long traces; by default a trace over the budget is judged in
  overlapping windows of whole steps instead (annotator.llm.windows), so no step goes unseen.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taxonomy.schema import TaxonomySpec

DEFAULT_INSTRUCTIONS = """\
You are an expert annotator of AI-agent execution traces. You read one trace (the steps an agent system took \
on a task) and decide which failure modes of the taxonomy below it shows.

Judge only from what the trace shows. A mode is present when at least one step clearly exhibits it; cite the \
step numbers that show it. When unsure, prefer "present": false. Give a one-line reason for every mode you \
mark present."""

SINGLE_PRIMARY_RULE = (
    'Exactly one present mode carries "primary": true: the main reason the run failed. '
    "Other present modes are secondary."
)

MIN_BUDGET = 2_000


@dataclass(frozen=True, slots=True)
class PromptMode:
    code: str
    name: str
    definition: str
    guidance: str = ""
    parent_code: str | None = None


@dataclass(frozen=True, slots=True)
class PromptTaxonomy:
    name: str
    single_primary: bool
    modes: tuple[PromptMode, ...]

    @classmethod
    def from_spec(cls, spec: TaxonomySpec) -> PromptTaxonomy:
        return cls(
            name=f"{spec.name} ({spec.slug} {spec.version})",
            single_primary=spec.labelling_mode == "single_primary",
            modes=tuple(
                PromptMode(m.code, m.name, m.definition, m.guidance, m.parent_code) for m in spec.all_modes()
            ),
        )

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(mode.code for mode in self.modes)


@dataclass(frozen=True, slots=True)
class PromptStep:
    index: int
    agent: str = ""
    role: str = ""
    kind: str = "message"
    tool_name: str = ""
    tool_args: Any = None
    content: str = ""


@dataclass(frozen=True, slots=True)
class PromptTrace:
    external_id: str
    steps: Sequence[PromptStep]
    task: str = ""
    system: str = ""
    outcome: str = "unknown"


def truncation_marker(chars: int, *, steps: tuple[int, int] | None = None) -> str:
    omitted = f"steps {steps[0]}-{steps[1]} omitted, " if steps else ""
    return f"[... {omitted}{chars:,} characters truncated ...]"


def render_taxonomy(taxonomy: PromptTaxonomy) -> str:
    lines = [f"Taxonomy: {taxonomy.name}", ""]
    for mode in taxonomy.modes:
        parent = f" (a subtype of {mode.parent_code})" if mode.parent_code else ""
        lines.append(f"- {mode.code}: {mode.name}{parent}")
        lines.append(f"  Definition: {mode.definition.strip()}")
        if mode.guidance.strip():
            lines.append(f"  Guidance: {mode.guidance.strip()}")
    return "\n".join(lines)


def answer_contract(taxonomy: PromptTaxonomy) -> str:
    """The fixed part the parser relies on: never editable, so a prompt edit cannot break parsing."""
    primary = ', "primary": true or false' if taxonomy.single_primary else ""
    example = taxonomy.codes[0] if taxonomy.codes else "CODE"
    lines = [
        "Answer with one JSON object and nothing else (no prose, no code fence):",
        "{",
        '  "modes": {',
        f'    "{example}": {{"present": true or false{primary}, "steps": [step numbers], '
        '"reason": "one line"}',
        "    ... one entry for every mode code listed above",
        "  },",
        '  "summary": "one line: the main failure, or why there is none",',
        '  "confidence": a number from 0 to 1: how sure you are of these labels as a whole',
        "}",
        "Use only the mode codes listed above. Step numbers are the numbers shown in the trace. For an absent "
        'mode write {"present": false}. If the trace shows no failure, every mode is absent.',
    ]
    if taxonomy.single_primary:
        lines.append(SINGLE_PRIMARY_RULE)
    return "\n".join(lines)


def system_message(taxonomy: PromptTaxonomy, instructions: str) -> str:
    return "\n\n".join([instructions.strip(), render_taxonomy(taxonomy), answer_contract(taxonomy)])


def _cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n{truncation_marker(len(text) - head - tail)}\n{text[len(text) - tail :]}"


def render_step(step: PromptStep, *, step_limit: int) -> str:
    header = [f"### Step {step.index}", f"agent: {step.agent or '-'}", f"kind: {step.kind}"]
    if step.role:
        header.append(f"role: {step.role}")
    if step.tool_name:
        header.append(f"tool: {step.tool_name}")
    body = []
    if step.tool_args not in (None, "", {}, []):
        args = (
            step.tool_args
            if isinstance(step.tool_args, str)
            else json.dumps(step.tool_args, ensure_ascii=False)
        )
        body.append(f"arguments: {args}")
    if step.content:
        body.append(step.content)
    return " · ".join(header) + "\n" + _cut_middle("\n".join(body), step_limit)


def step_limit(budget: int) -> int:
    """The most characters one step's body keeps under `budget` (beyond it the step is cut in its middle)."""
    return max(1_000, max(budget, MIN_BUDGET) // 4)


def render_trace(steps: Sequence[PromptStep], budget: int) -> str:
    """The steps within `budget` characters (about; markers and headers add a little): oversized steps are
    cut in their middle, then whole steps from the middle of the trace, keeping its head and its tail."""
    budget = max(budget, MIN_BUDGET)
    blocks = [render_step(step, step_limit=step_limit(budget)) for step in steps]
    if sum(len(block) + 2 for block in blocks) <= budget:
        return "\n\n".join(blocks)
    head: list[str] = []
    used = 0
    for block in blocks:
        if used + len(block) + 2 > budget // 2:
            break
        head.append(block)
        used += len(block) + 2
    tail: list[str] = []
    for block in reversed(blocks[len(head) :]):
        if used + len(block) + 2 > budget:
            break
        tail.insert(0, block)
        used += len(block) + 2
    cut = blocks[len(head) : len(blocks) - len(tail)]
    if not cut:
        return "\n\n".join(blocks)
    first, last = steps[len(head)].index, steps[len(blocks) - len(tail) - 1].index
    marker = truncation_marker(sum(len(block) + 2 for block in cut), steps=(first, last))
    return "\n\n".join([*head, marker, *tail])


def trace_header(trace: PromptTrace) -> list[str]:
    """The lines before the steps: which trace, its task and recorded outcome, how many steps."""
    n = len(trace.steps)
    numbers = f"numbered {trace.steps[0].index} to {trace.steps[-1].index}" if n else "no steps"
    return [
        f"Trace {trace.external_id}" + (f" (agent system: {trace.system})" if trace.system else ""),
        f"Task: {_cut_middle(trace.task.strip(), 4_000) or '(not given)'}",
        f"Recorded outcome: {trace.outcome}",
        f"The trace has {n} steps, {numbers}.",
    ]


def user_message(trace: PromptTrace, budget: int) -> str:
    lines = [
        *trace_header(trace),
        "",
        render_trace(trace.steps, budget),
        "",
        "Now answer with the JSON object.",
    ]
    return "\n".join(lines)


def build_messages(
    taxonomy: PromptTaxonomy, trace: PromptTrace, instructions: str, *, budget: int
) -> list[dict[str, str]]:
    """The chat messages for one trace (OpenAI chat-completions format)."""
    return [
        {"role": "system", "content": system_message(taxonomy, instructions or DEFAULT_INSTRUCTIONS)},
        {"role": "user", "content": user_message(trace, budget)},
    ]


def correction_messages(bad_answer: str, problem: str) -> list[dict[str, str]]:
    """Appended for the one retry after a malformed answer: the model sees what was wrong."""
    return [
        {"role": "assistant", "content": bad_answer[:8_000]},
        {
            "role": "user",
            "content": f"That answer cannot be used: {problem}. Answer again with only the JSON object, "
            "following the format exactly.",
        },
    ]
