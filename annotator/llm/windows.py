"""Judge a trace longer than the character budget in overlapping windows of steps, and merge the verdicts.
Pure: no Django.

Why: cutting the middle of a long trace (the "cut" option, annotator.llm.prompt.render_trace) hides exactly
the steps where long-running agents (SRE rollouts of megabytes) usually go wrong. With windows every step is
seen by the model at least once, and evidence can point at any step of the trace.

Windows (`plan_windows`): consecutive whole steps, each window's rendered steps within the budget (a single
step larger than a quarter of the budget is still cut inside, with the usual "[... N characters truncated
...]" marker, so one step always fits). Consecutive windows share up to `overlap` steps (at most half the
budget's worth, so every window moves forward), so a failure that spans a window's edge is seen whole by one
of them. A trace that fits the budget is one request, exactly as before.

Each window's user message names the trace, its task and recorded outcome, says "window k of K: steps i to
j" and that step numbers are the trace's own. The model must cite steps of its window only: evidence outside
it makes the answer malformed (`check_window`), and the labeller asks once more, as for any malformed answer.

The merge rule (`merge_answers`), for the windows of one trace:

- a mode is present when any window finds it present;
- its evidence steps are the union of the steps every window cited for it;
- its reason joins the windows' distinct reasons ("; ", at most REASON_LIMIT characters), as does the summary
  (of the windows that found a failure, or of all windows when none did);
- its confidence (when the model gives one) is the lowest of the windows';
- "no failure" only when every window says so (no mode present in any window);
- single-primary taxonomies: the primary is the mode that the most windows marked primary; on a tie, the one
  marked primary in the earliest window, because a failure's cause comes before the steps that show its
  consequences;
- all or nothing: when any window fails (malformed twice, the endpoint unavailable or refusing), the whole
  trace fails and no label of the other windows is stored (annotator.services.llm.labeller stops there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from annotator.llm.parse import REASON_LIMIT, MalformedAnswer, ParsedAnswer, ParsedLabel
from annotator.llm.prompt import (
    DEFAULT_INSTRUCTIONS,
    MIN_BUDGET,
    PromptTaxonomy,
    PromptTrace,
    build_messages,
    render_step,
    step_limit,
    system_message,
    trace_header,
)

WINDOWS = "windows"
CUT = "cut"
LONG_TRACE_CHOICES = (
    (WINDOWS, "Judge in overlapping windows (every step seen)"),
    (CUT, "Cut the middle out (marked; the model never sees it)"),
)
DEFAULT_OVERLAP = 2
MAX_OVERLAP = 20
SEPARATOR = 2  # the "\n\n" between rendered steps


@dataclass(frozen=True, slots=True)
class PromptWindow:
    """One request about a trace: window `number` of `of`, showing steps `first` to `last` (the trace's own
    step numbers). A trace that fits the budget, or any trace with the "cut" option, is one window of one."""

    number: int
    of: int
    first: int
    last: int
    messages: list[dict[str, str]]

    @property
    def windowed(self) -> bool:
        return self.of > 1

    @property
    def label(self) -> str:
        return f"window {self.number} of {self.of} (steps {self.first}-{self.last})"


def plan_windows(sizes: Sequence[int], budget: int, overlap: int) -> list[tuple[int, int]]:
    """Windows as [start, end) positions into the steps whose rendered sizes (separator included) are
    `sizes`: in order, covering every step, each within `budget` (or a single step), consecutive windows
    sharing up to `overlap` steps, but carrying at most half the budget so each window adds a new step."""
    n = len(sizes)
    if n == 0:
        return [(0, 0)]
    windows: list[tuple[int, int]] = []
    start = 0
    while True:
        end, used = start, 0
        while end < n and (end == start or used + sizes[end] <= budget):
            used += sizes[end]
            end += 1
        windows.append((start, end))
        if end >= n:
            return windows
        back, carried = 0, 0
        while back < overlap and end - back - 1 > start and carried + sizes[end - back - 1] <= budget // 2:
            carried += sizes[end - back - 1]
            back += 1
        start = end - back


def step_windows(
    trace: PromptTrace, *, budget: int, overlap: int = DEFAULT_OVERLAP
) -> list[tuple[PromptWindow, str]]:
    """The trace's steps in windows within `budget` (`plan_windows`), each as (the window, without messages;
    its steps rendered as the prompt shows them); empty when the whole trace fits in one request. Shared by
    the LLM rater and discovery's analyses, so both split a long trace the same way."""
    budget = max(budget, MIN_BUDGET)
    steps = trace.steps
    blocks = [render_step(step, step_limit=step_limit(budget)) for step in steps]
    sizes = [len(block) + SEPARATOR for block in blocks]
    if sum(sizes) <= budget:
        return []
    plan = plan_windows(sizes, budget, max(0, overlap))
    return [
        (
            PromptWindow(number, len(plan), steps[start].index, steps[end - 1].index, []),
            "\n\n".join(blocks[start:end]),
        )
        for number, (start, end) in enumerate(plan, start=1)
    ]


def window_messages(
    taxonomy: PromptTaxonomy,
    trace: PromptTrace,
    instructions: str,
    *,
    budget: int,
    long_traces: str = WINDOWS,
    overlap: int = DEFAULT_OVERLAP,
) -> list[PromptWindow]:
    """The requests for one trace: one when it fits `budget` (or when `long_traces` is "cut": the middle is
    then cut out with a marker), else one per window. The system message is the same for every window."""
    budget = max(budget, MIN_BUDGET)
    steps = trace.steps
    first, last = (steps[0].index, steps[-1].index) if steps else (0, -1)
    whole = PromptWindow(1, 1, first, last, [])
    split = [] if long_traces == CUT else step_windows(trace, budget=budget, overlap=overlap)
    if not split:
        return [replace(whole, messages=build_messages(taxonomy, trace, instructions, budget=budget))]
    system = {"role": "system", "content": system_message(taxonomy, instructions or DEFAULT_INSTRUCTIONS)}
    return [
        replace(
            window,
            messages=[system, {"role": "user", "content": _window_user_message(trace, window, rendered)}],
        )
        for window, rendered in split
    ]


def _window_user_message(trace: PromptTrace, window: PromptWindow, rendered: str) -> str:
    lines = [
        *trace_header(trace),
        f"It is too long for one request, so it is judged in {window.of} overlapping windows of consecutive "
        f"steps. This is window {window.number} of {window.of}: steps {window.first} to {window.last}.",
        f"Step numbers are the trace's own: cite only steps {window.first} to {window.last}, as numbered "
        "below. Judge only what these steps show (the other windows cover the rest); if they show no "
        "failure, every mode is absent.",
        "",
        rendered,
        "",
        "Now answer with the JSON object.",
    ]
    return "\n".join(lines)


def check_window(answer: ParsedAnswer, window: PromptWindow) -> None:
    """MalformedAnswer when a windowed answer cites a step its window does not show (the message is what
    the model reads on its retry)."""
    if not window.windowed:
        return
    for label in answer.labels:
        outside = [step for step in label.steps if not window.first <= step <= window.last]
        if outside:
            raise MalformedAnswer(
                f"step {outside[0]} cited for {label.code} is not in this window: cite only steps "
                f"{window.first} to {window.last}, numbered as shown"
            )


def merge_answers(answers: Sequence[ParsedAnswer], *, single_primary: bool) -> ParsedAnswer:
    """One answer from the windows' answers, in window order, by the rule in the module's docstring."""
    if not answers:
        raise ValueError("no answers to merge")
    if len(answers) == 1:
        return answers[0]
    found: dict[str, list[ParsedLabel]] = {}
    for answer in answers:
        for label in answer.labels:
            found.setdefault(label.code, []).append(label)
    primary = _primary(answers) if single_primary else None
    labels = tuple(
        # replace() keeps any further field of the first window's label as it is
        replace(
            hits[0],
            steps=tuple(sorted({step for hit in hits for step in hit.steps})),
            primary=code == primary,
            reason=join_bounded(hit.reason for hit in hits),
        )
        for code, hits in found.items()
    )
    summaries = [answer.summary for answer in answers if answer.labels or not labels]
    # The least sure window speaks for the trace: triage sends people where any part of it is doubtful.
    confidence = min((a.confidence for a in answers if a.confidence is not None), default=None)
    return replace(answers[0], labels=labels, summary=join_bounded(summaries), confidence=confidence)


def _primary(answers: Sequence[ParsedAnswer]) -> str | None:
    votes: dict[str, int] = {}  # insertion order = the window that first marked it primary
    for answer in answers:
        for label in answer.labels:
            if label.primary:
                votes[label.code] = votes.get(label.code, 0) + 1
    if not votes:
        return None
    most = max(votes.values())
    return next(code for code, count in votes.items() if count == most)


def join_bounded(texts, limit: int = REASON_LIMIT) -> str:
    """The distinct non-empty texts in order, joined with "; ", cut to `limit` characters with an ellipsis."""
    distinct: list[str] = []
    for text in texts:
        text = (text or "").strip()
        if text and text not in distinct:
            distinct.append(text)
    joined = "; ".join(distinct)
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"
