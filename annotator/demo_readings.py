"""How the demo's annotators and adjudicator read a generated trace (pure: no Django).

The demo's traces come from `traces.importers.synthetic`, whose steps carry a few visible symptoms: a tool
that fails ("Traceback: ..."), a verifier's verdict ("tests pass" / "tests fail"), a planner's doubt ("the
last result looks wrong"), the same tool called over and over, and the run's outcome. A reader maps them to
MAST modes, always pinning the steps that show them:

- FM-3.3 (incorrect verification): the verifier reports passing tests after a tool failed. Plain to see.
- FM-3.1 (premature termination): a failed run whose last verdict is "tests fail": it stopped with the
  work known to be broken. Plain to see.
- FM-3.2 (no verification): a failed run in which nobody ever checked the work. Plain to see.
- FM-2.6 (reasoning-action mismatch): the planner doubts a result and the team acts on it anyway. A
  judgement call: how soon after the doubt must the action come?
- FM-1.3 (step repetition): the same tool called again straight after its own result. A judgement call
  too: is a call that comes one step later still the same step redone, or a new attempt?

The two annotators settle the judgement calls differently (their `Habits`), and each overlooks a plain
symptom now and then (a seeded draw per annotator and trace), so their labels mostly agree and disagree
where real annotators do. The adjudicator reads the judgement calls strictly (the guidance's reading).
Everything is a function of the trace and the names, so the demo seeds the same labels every time.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

# Per plain symptom, the chance that an annotator overlooks it on a given trace.
OVERLOOK = 0.1


@dataclass(frozen=True)
class DemoStep:
    index: int
    kind: str
    agent: str
    content: str
    tool_name: str


@dataclass(frozen=True)
class Finding:
    mode: str
    steps: tuple[int, ...]
    note: str


@dataclass(frozen=True)
class Habits:
    """How an annotator settles the two judgement calls."""

    # FM-1.3 needs a tool called again at most this many steps after its previous call (2: right after the
    # call's result).
    repeat_gap: int
    # FM-2.6 needs the action within this many steps after the doubt.
    doubt_reach: int


# The adjudicator's reading: a repetition is a call made again right after its result, and a mismatch is
# an action right after the doubt.
STRICT = Habits(repeat_gap=2, doubt_reach=1)


@dataclass(frozen=True)
class Reading:
    findings: tuple[Finding, ...]
    confidence: int
    elapsed_seconds: int
    note: str

    @property
    def no_failure(self) -> bool:
        return not self.findings

    @property
    def modes(self) -> frozenset[str]:
        return frozenset(finding.mode for finding in self.findings)


@dataclass(frozen=True)
class ModeChoice:
    """The adjudicator's answer for one disputed mode: whose answer to take (a letter) and why."""

    mode: str
    choice: str
    reason_code: str
    note: str


def findings(steps: Sequence[DemoStep], outcome: str, habits: Habits) -> list[Finding]:
    """Every symptom of the trace a reader with `habits` labels, in MAST order."""
    found = _verification(steps, outcome)
    found += _doubt_ignored(steps, habits.doubt_reach)
    found += _repetition(steps, habits.repeat_gap)
    return sorted(found, key=lambda finding: finding.mode)


def read_trace(
    steps: Sequence[DemoStep], outcome: str, habits: Habits, *, reader: str, trace: str
) -> Reading:
    """What `reader` submits for `trace`: the findings of their habits, less the plain symptoms they
    overlook on this trace (seeded by the two names, so the same every run)."""
    rng = random.Random(f"demo:{reader}:{trace}")
    judgement = {"FM-1.3", "FM-2.6"}
    kept = [
        finding
        for finding in findings(steps, outcome, habits)
        if finding.mode in judgement or rng.random() >= OVERLOOK
    ]
    unsure = any(finding.mode in judgement for finding in kept)
    return Reading(
        findings=tuple(kept),
        confidence=rng.choice((3, 4)) if unsure else rng.choice((4, 5)),
        elapsed_seconds=rng.randint(90, 540),
        note="" if kept else "The run does what the task asks; every check it makes holds.",
    )


def adjudicate(
    disputed: Sequence[str], truth: frozenset[str], answers: Sequence[frozenset[str]]
) -> list[ModeChoice]:
    """The adjudicator's choice for each disputed mode: the annotator (a, b, ... in `answers` order) whose
    answer matches `truth`, with the reason."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    choices = []
    for mode in disputed:
        present = mode in truth
        k = next(i for i, answer in enumerate(answers) if (mode in answer) == present)
        if present:
            reason, note = "evidence", "The pinned steps show it."
        elif mode == "FM-1.3":
            reason, note = "definition", "Another step comes between the calls: a new attempt, not a repeat."
        elif mode == "FM-2.6":
            reason, note = "definition", "The action does not follow from the doubt."
        else:
            reason, note = "no_evidence", ""
        choices.append(ModeChoice(mode=mode, choice=letters[k], reason_code=reason, note=note))
    return choices


def _verdict(step: DemoStep) -> str | None:
    if step.agent != "verifier":
        return None
    if "tests pass" in step.content:
        return "pass"
    if "tests fail" in step.content:
        return "fail"
    return None


def _verification(steps: Sequence[DemoStep], outcome: str) -> list[Finding]:
    found = []
    verdicts = [(step, _verdict(step)) for step in steps if _verdict(step)]
    error = next((step for step in steps if step.kind == "error"), None)
    if error is not None:
        passed = next((s for s, v in verdicts if v == "pass" and s.index > error.index), None)
        if passed is not None:
            note = (
                f"Step {error.index} failed, yet the verifier reports passing tests at step {passed.index}."
            )
            found.append(Finding("FM-3.3", (error.index, passed.index), note))
    if outcome == "failure" and steps:
        last = steps[-1].index
        if not verdicts:
            found.append(Finding("FM-3.2", (last,), "The run fails and nobody ever checked the work."))
        elif verdicts[-1][1] == "fail":
            verdict = verdicts[-1][0].index
            note = f"The last check (step {verdict}) fails and the run ends without a fix."
            found.append(Finding("FM-3.1", tuple(sorted({verdict, last})), note))
    return found


def _doubt_ignored(steps: Sequence[DemoStep], reach: int) -> list[Finding]:
    for i, step in enumerate(steps):
        if step.kind != "reasoning" or "looks wrong" not in step.content:
            continue
        for later in steps[i + 1 : i + 1 + reach]:
            if later.kind == "tool_call" or later.content.startswith("Plan step"):
                note = f"The planner doubts the result at step {step.index}, then step {later.index} goes on as planned."
                return [Finding("FM-2.6", (step.index, later.index), note)]
    return []


def _repetition(steps: Sequence[DemoStep], gap: int) -> list[Finding]:
    calls = [step for step in steps if step.kind == "tool_call"]
    for first, again in pairwise(calls):
        if again.tool_name == first.tool_name and again.index - first.index <= gap:
            note = f"{again.tool_name} is called again at step {again.index}, right after step {first.index}."
            return [Finding("FM-1.3", (first.index, again.index), note)]
    return []
