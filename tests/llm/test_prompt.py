"""The prompt builder (pure): taxonomy, numbered steps, explicit truncation keeping head and tail."""

from __future__ import annotations

import re

from annotator.llm.prompt import (
    DEFAULT_INSTRUCTIONS,
    SINGLE_PRIMARY_RULE,
    PromptMode,
    PromptStep,
    PromptTaxonomy,
    PromptTrace,
    build_messages,
    render_trace,
)
from taxonomy.schema import builtin_paths, load_taxonomy_file

MULTI = PromptTaxonomy(
    name="Tiny",
    single_primary=False,
    modes=(
        PromptMode("M-1", "Loops", "Repeats the same action", "Look for identical tool calls"),
        PromptMode("M-2", "Gives up", "Stops before the task is done"),
    ),
)


def steps(n: int, size: int = 20) -> list[PromptStep]:
    return [
        PromptStep(i, agent=f"agent{i % 2}", kind="tool_call" if i % 3 == 0 else "message", tool_name="search" if i % 3 == 0 else "",
                   tool_args={"q": i} if i % 3 == 0 else None, content=f"<content of step {i}>" + "x" * size)
        for i in range(n)
    ]  # fmt: skip


def test_it_lists_every_mode_with_definition_and_guidance_and_the_answer_format():
    system, user = build_messages(
        MULTI, PromptTrace("t-1", steps(3), task="Book a flight"), DEFAULT_INSTRUCTIONS, budget=10_000
    )
    assert system["role"] == "system" and user["role"] == "user"
    for text in (
        "M-1: Loops",
        "Definition: Repeats the same action",
        "Guidance: Look for identical tool calls",
        "M-2: Gives up",
    ):
        assert text in system["content"]
    assert '"modes"' in system["content"] and '"present"' in system["content"]
    assert SINGLE_PRIMARY_RULE not in system["content"]
    assert "Task: Book a flight" in user["content"]
    assert "The trace has 3 steps, numbered 0 to 2." in user["content"]


def test_steps_carry_their_index_agent_kind_and_tool():
    text = render_trace(steps(4), 10_000)
    assert "### Step 0 · agent: agent0 · kind: tool_call · tool: search" in text
    assert "### Step 1 · agent: agent1 · kind: message" in text
    assert 'arguments: {"q": 3}' in text


def test_single_primary_taxonomies_ask_for_exactly_one_primary():
    spec = load_taxonomy_file(next(p for p in builtin_paths() if "agent-failures-6" in p.name))
    taxonomy = PromptTaxonomy.from_spec(spec)
    assert taxonomy.single_primary
    system = build_messages(taxonomy, PromptTrace("t", steps(1)), "Label it.", budget=5_000)[0]["content"]
    assert SINGLE_PRIMARY_RULE in system and '"primary": true or false' in system
    assert all(f"- {code}:" in system for code in taxonomy.codes)


def test_a_long_trace_keeps_head_and_tail_and_marks_what_was_cut():
    many = steps(400, size=200)
    text = render_trace(many, 20_000)
    assert len(text) < 21_000
    assert "### Step 0 " in text and "### Step 399 " in text  # head and tail kept
    marker = re.search(r"\[\.\.\. steps (\d+)-(\d+) omitted, ([\d,]+) characters truncated \.\.\.\]", text)
    assert marker, text[:500]
    first, last = int(marker.group(1)), int(marker.group(2))
    assert 0 < first < last < 399
    assert f"### Step {first} " not in text and f"### Step {last} " not in text
    assert f"### Step {first - 1} " in text and f"### Step {last + 1} " in text


def test_an_oversized_step_is_cut_in_its_middle_with_the_count():
    huge = [PromptStep(0, content="HEAD" + "y" * 50_000 + "TAIL")]
    text = render_trace(huge, 8_000)
    assert "HEAD" in text and "TAIL" in text
    cut = int(re.search(r"\[\.\.\. ([\d,]+) characters truncated \.\.\.\]", text).group(1).replace(",", ""))
    assert cut > 45_000 and len(text) < 3_000


def test_a_short_trace_is_untouched():
    assert "truncated" not in render_trace(steps(5), 60_000)
