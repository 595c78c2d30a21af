"""Synthetic traces with planted failure patterns, for checking that discovery finds what is there and
nothing else (the tests and bench/bench_discovery.py). Pure: no Django; `store_traces` is the one bridge.

Each trace is a short agent run. Some carry one of the planted patterns (failures no MAST mode names), some
a failure a current mode covers (step repetition), some a failure that restates a current mode in other
words (a missing verification), and every trace a line of noise of its own.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pattern:
    key: str
    phrase: str  # the step text that shows it (what a quote must find verbatim)
    descriptions: tuple[str, ...]  # ways a reader describes it
    code: str
    name: str
    definition: str


PLANTED = (
    Pattern(
        "pagination",
        "Fetched page 1 of 7 of the search results and stopped reading there.",
        (
            "The agent read only the first page of paginated results and ignored the remaining pages.",
            "Only page one of the paginated listing was read; later pages were never fetched.",
            "Paginated results were truncated to the first page, so the remaining pages went unread.",
        ),
        "PAGINATION",
        "Partial pagination",
        "The agent reads only the first page of paginated results and acts as if it had them all.",
    ),
    Pattern(
        "stale-credentials",
        "Reused the cached API token from yesterday's session although it had expired.",
        (
            "The agent reused expired cached credentials instead of obtaining a fresh token.",
            "A stale cached token from an earlier session was reused after it expired.",
            "Expired credentials were taken from the cache and reused, so the calls were rejected.",
        ),
        "STALE-CREDS",
        "Stale cached credentials",
        "The agent reuses an expired cached token or credential instead of obtaining a fresh one.",
    ),
    Pattern(
        "units",
        "Converted the timeout of 30 seconds into 30 milliseconds before calling the API.",
        (
            "The agent confused units, converting seconds into milliseconds without scaling.",
            "A value in seconds was treated as milliseconds: a unit conversion mistake.",
            "Units were mixed up when converting the timeout, seconds becoming milliseconds.",
        ),
        "UNIT-MIXUP",
        "Unit conversion mix-up",
        "The agent converts a quantity between units (seconds, milliseconds, bytes) without scaling it.",
    ),
)

# In the words of MAST's FM-3.2 ("No or incomplete verification"): an analysis the model wrongly leaves
# uncovered; its candidate must be dropped as a restatement of FM-3.2.
RESTATED = Pattern(
    "restated",
    "Declared the task complete without running any check on the output.",
    (
        "The system does not check its result, so an error a reasonable check would have caught reaches the output.",
        "No verification: the system does not check its result before the final output.",
        "The result is never checked; an error that a check would have caught reaches the final output.",
    ),
    "NO-CHECK",
    "Result not checked",
    "The system does not check its result, so an error that a reasonable check would have caught reaches "
    "the final output.",
)

COVERED = Pattern(
    "repetition",
    "Repeated the same search query for the fourth time.",
    ("The agent repeats the same step again and again.",),
    "FM-1.3",
    "Step repetition",
    "",
)

FILLER = (
    "Read the task description.",
    "Listed the files in the working directory.",
    "Opened the configuration file.",
    "Called the search tool.",
    "Summarised the findings for the user.",
)


@dataclass
class SyntheticTrace:
    external_id: str
    outcome: str
    steps: list[str]
    planted: set[str] = field(default_factory=set)
    noise: str = ""


def _nonsense(rng: random.Random) -> str:
    """A line of made-up words: noise that resembles nothing else (it must not form a group)."""
    letters = "bcdfghjklmnpqrstvwxz"
    vowels = "aeiou"
    words = ["".join(rng.choice(letters) + rng.choice(vowels) for _ in range(3)) for _ in range(6)]
    return "Odd event: " + " ".join(words) + "."


def planted_traces(n: int, *, per_pattern: int, seed: int = 0, prefix: str = "syn") -> list[SyntheticTrace]:
    """`n` traces; each planted pattern (and the restated and covered ones) in `per_pattern` of them, at
    random places; every trace has one line of noise of its own."""
    rng = random.Random(seed)
    traces = [
        SyntheticTrace(f"{prefix}-{i}", "failure" if i % 5 else "success", rng.sample(FILLER, 4))
        for i in range(n)
    ]
    for pattern in (*PLANTED, RESTATED, COVERED):
        for t in rng.sample(traces, per_pattern):
            t.steps.insert(rng.randrange(1, len(t.steps)), pattern.phrase)
            t.planted.add(pattern.key)
            t.outcome = "failure"
    for t in traces:
        t.noise = _nonsense(rng)
        t.steps.insert(rng.randrange(0, len(t.steps) + 1), t.noise)
    return traces


def store_traces(batch, traces: list[SyntheticTrace]) -> list:
    """Insert the traces into `batch` (a traces.models.Batch); returns the Trace rows."""
    from traces.models import Step, Trace

    rows = Trace.objects.bulk_create(
        Trace(
            batch=batch,
            external_id=t.external_id,
            content_hash=f"{batch.pk}-{t.external_id}",
            task="Answer the user's request with the tools available.",
            system="synthetic",
            outcome=t.outcome,
            step_count=len(t.steps),
        )
        for t in traces
    )
    Step.objects.bulk_create(
        Step(trace=row, index=i, agent="agent", kind="message", content=text)
        for row, t in zip(rows, traces, strict=True)
        for i, text in enumerate(t.steps)
    )
    return rows
