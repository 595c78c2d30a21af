"""Induction of candidate failure modes: the prompts, the parsing of the answers, the grouping and the
consolidation. Pure: no Django.

(a) Each trace of the induction sample gets an analysis: what went wrong, where (the trace's own step
numbers), verbatim quotes, and which current modes cover it (or none). A trace over the character budget is
read as the LLM rater reads it (its settings' choice): in overlapping windows of consecutive steps, each
window's answer citing only its own steps and the windows' failures joined, or in one request with its
middle cut out. (b) The analyses no current mode
covers are grouped by the similarity of their words (TF-IDF with scikit-learn, cosine distance,
average-linkage clustering; or vectors the endpoint gave) and groups with fewer than `min_support` traces are
left out; the model names and defines one candidate per group. (c) Consolidation is done by code, never by
the model: a candidate whose example quote is not found verbatim in the step it cites is dropped, near
duplicates are merged, and a candidate that restates a current mode is dropped with that mode named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotator.llm.parse import MalformedAnswer, extract_json
from annotator.llm.prompt import PromptTaxonomy, PromptTrace, render_taxonomy, trace_header, user_message
from annotator.llm.windows import CUT, DEFAULT_OVERLAP, PromptWindow, step_windows

MAX_FAILURES = 10
MAX_TEXT = 1_000
MAX_QUOTE = 500
MAX_GROUP_SHOWN = 12
MIN_EXAMPLES = 3
# Cosine distance under which groups merge: TF-IDF rows of the same failure share few words (0.75); dense
# embeddings of the same failure sit much closer (0.35).
TFIDF_THRESHOLD = 0.75
EMBEDDING_THRESHOLD = 0.35
CODE = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,19}$")

ANALYSE_INSTRUCTIONS = """\
You are an expert reader of AI-agent execution traces. Read the trace and say what went wrong in it, if \
anything: each distinct failure, the steps where it shows (the trace's own step numbers), one or more quotes \
copied character for character from those steps, and which modes of the taxonomy below cover it (an empty \
list when none does). Do not force a failure onto a mode that does not fit it."""

ANALYSE_CONTRACT = """\
Answer with one JSON object and nothing else:
{"failures": [{"what": "one or two sentences", "steps": [step numbers], \
"quotes": [{"step": step number, "text": "exact text from that step"}], "covered_by": [mode codes]}]}
An empty "failures" list means nothing went wrong."""

NAME_INSTRUCTIONS = """\
Below are analyses of several agent traces that describe failures no mode of the current taxonomy covers. \
Name the one failure mode they share, so that annotators can apply it consistently: a short code, a name, a \
definition, when to use it and when not to (in particular, how it differs from the current modes), and at \
least three examples, each with the trace id, the step and a quote copied exactly from the analyses."""

NAME_CONTRACT = """\
Answer with one JSON object and nothing else:
{"code": "SHORT-CODE", "name": "...", "definition": "...", "when_to_use": "...", "when_not_to_use": "...", \
"examples": [{"trace": "trace id", "step": step number, "quote": "exact quote"}]}"""


@dataclass(frozen=True)
class Quote:
    step: int
    text: str


@dataclass(frozen=True)
class Analysis:
    """One failure a trace shows, as the model described it."""

    trace: int  # the trace's id
    external_id: str
    what: str
    steps: tuple[int, ...]
    quotes: tuple[Quote, ...]
    covered_by: tuple[str, ...]

    @property
    def text(self) -> str:
        """What grouping compares: the description and the quotes."""
        return " ".join([self.what, *(q.text for q in self.quotes)])

    def as_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "external_id": self.external_id,
            "what": self.what,
            "steps": list(self.steps),
            "quotes": [{"step": q.step, "text": q.text} for q in self.quotes],
            "covered_by": list(self.covered_by),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Analysis:
        return cls(
            trace=int(data["trace"]),
            external_id=str(data["external_id"]),
            what=str(data["what"]),
            steps=tuple(int(s) for s in data["steps"]),
            quotes=tuple(Quote(int(q["step"]), str(q["text"])) for q in data["quotes"]),
            covered_by=tuple(str(c) for c in data["covered_by"]),
        )


@dataclass
class Candidate:
    code: str
    name: str
    definition: str
    when_to_use: str = ""
    when_not_to_use: str = ""
    # [{"trace": id, "external_id": ..., "step": n, "quote": ...}]
    examples: list[dict[str, Any]] = field(default_factory=list)
    support: int = 0  # the traces of its group

    @property
    def guidance(self) -> str:
        parts = [f"Use when: {self.when_to_use}" if self.when_to_use else "", ""]
        parts[1] = f"Do not use when: {self.when_not_to_use}" if self.when_not_to_use else ""
        return " ".join(p for p in parts if p)

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "definition": self.definition,
            "guidance": self.guidance,
            "when_to_use": self.when_to_use,
            "when_not_to_use": self.when_not_to_use,
            "examples": list(self.examples),
            "support": self.support,
        }


# --- (a) analyses ---


def analysis_messages(taxonomy: PromptTaxonomy, trace: PromptTrace, *, budget: int) -> list[dict[str, str]]:
    """One request about the whole trace (a trace over `budget` has its middle cut, marked)."""
    return [_analysis_system(taxonomy), {"role": "user", "content": user_message(trace, budget)}]


def _analysis_system(taxonomy: PromptTaxonomy) -> dict[str, str]:
    system = "\n\n".join([ANALYSE_INSTRUCTIONS, render_taxonomy(taxonomy), ANALYSE_CONTRACT])
    return {"role": "system", "content": system}


@dataclass(frozen=True)
class AnalysisRequest:
    """One request of a trace's analysis: the steps it shows (the trace's own numbers, the only ones its
    answer may cite) and its messages. `window` names it when the trace is read in several."""

    steps: frozenset[int]
    messages: list[dict[str, str]]
    window: PromptWindow | None = None
    cut: bool = False  # the trace was over the budget and its middle steps were cut out (marked)

    @property
    def where(self) -> str:
        return f"{self.window.label}: " if self.window is not None else ""


def analysis_requests(
    taxonomy: PromptTaxonomy,
    trace: PromptTrace,
    *,
    budget: int,
    long_traces: str = CUT,
    overlap: int = DEFAULT_OVERLAP,
) -> list[AnalysisRequest]:
    """The requests that analyse `trace`, with the LLM rater's choice for long traces (its settings): one
    request when the trace fits `budget` or `long_traces` is "cut" (the middle then cut, marked); else one
    per window of consecutive steps (annotator.llm.windows.step_windows), so a failure in the middle of a
    long trace is read like any other."""
    split = step_windows(trace, budget=budget, overlap=overlap)
    if long_traces == CUT or not split:
        steps = frozenset(s.index for s in trace.steps)
        return [AnalysisRequest(steps, analysis_messages(taxonomy, trace, budget=budget), cut=bool(split))]
    system = _analysis_system(taxonomy)
    out = []
    for window, rendered in split:
        user = "\n".join(
            [
                *trace_header(trace),
                f"It is too long for one request, so it is read in {window.of} overlapping windows of "
                f"consecutive steps. This is window {window.number} of {window.of}: steps {window.first} "
                f"to {window.last}.",
                f"Step numbers are the trace's own: cite and quote only steps {window.first} to "
                f"{window.last}, as numbered below. Say only what these steps show (the other windows cover "
                'the rest); if they show nothing wrong, answer an empty "failures" list.',
                "",
                rendered,
                "",
                "Now answer with the JSON object.",
            ]
        )
        steps = frozenset(s.index for s in trace.steps if window.first <= s.index <= window.last)
        out.append(AnalysisRequest(steps, [system, {"role": "user", "content": user}], window))
    return out


def merge_analyses(parts: Sequence[Sequence[Analysis]]) -> list[Analysis]:
    """The failures of a trace's windows, in window order; a failure two overlapping windows both report
    (the same quotes) is kept once."""
    seen: set[tuple[Quote, ...]] = set()
    out = []
    for part in parts:
        for analysis in part:
            key = tuple(sorted(analysis.quotes, key=lambda q: (q.step, q.text)))
            if key and key in seen:
                continue
            seen.add(key)
            out.append(analysis)
    return out


def _text(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MalformedAnswer(f"{what} must be a non-empty string")
    return value.strip()[:limit]


def _step(value: Any, steps: frozenset[int], what: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or value not in steps:
        raise MalformedAnswer(f"{what}: {str(value)[:20]!r} is not a step of this trace")
    return value


def parse_analysis(
    text: str, *, trace: int, external_id: str, steps: frozenset[int], codes: Sequence[str]
) -> list[Analysis]:
    """The failures of one analysis answer; MalformedAnswer says why it cannot be used (an unknown mode
    code, a step the trace does not have, a missing field)."""
    data = extract_json(text)
    if not isinstance(data, dict) or not isinstance(data.get("failures"), list):
        raise MalformedAnswer('the answer must be an object with a "failures" list')
    if len(data["failures"]) > MAX_FAILURES:
        raise MalformedAnswer(f"at most {MAX_FAILURES} failures per trace")
    known = set(codes)
    out = []
    for n, item in enumerate(data["failures"], 1):
        if not isinstance(item, dict):
            raise MalformedAnswer(f"failure {n} must be an object")
        what = _text(item.get("what"), f'failure {n}\'s "what"', MAX_TEXT)
        cited = tuple(sorted({_step(s, steps, f"failure {n}") for s in item.get("steps") or []}))
        quotes = []
        for q in item.get("quotes") or []:
            if not isinstance(q, dict):
                raise MalformedAnswer(f"failure {n}: a quote must be an object with step and text")
            quotes.append(
                Quote(
                    _step(q.get("step"), steps, f"failure {n}'s quote"),
                    _text(q.get("text"), "a quote", MAX_QUOTE),
                )
            )
        covered = item.get("covered_by") or []
        if not isinstance(covered, list) or any(c not in known for c in covered):
            raise MalformedAnswer(f"failure {n}: covered_by must list mode codes of the taxonomy")
        out.append(Analysis(trace, external_id, what, cited, tuple(quotes), tuple(covered)))
    return out


# --- (b) grouping and naming ---


def tfidf_vectors(texts: Sequence[str]) -> np.ndarray:
    """L2-normalised TF-IDF rows (English stop words left out, sublinear term frequency)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        stop_words="english", sublinear_tf=True, token_pattern=r"(?u)\b[a-zA-Z]{3,}\b"
    )
    try:
        return vectorizer.fit_transform(texts).toarray()
    except ValueError:  # nothing but stop words
        return np.zeros((len(texts), 1))


def group_vectors(
    vectors: np.ndarray, *, threshold: float = TFIDF_THRESHOLD, min_support: int = MIN_EXAMPLES
) -> list[list[int]]:
    """Rows grouped by average-linkage clustering on cosine distance (groups merge while their average
    distance is under `threshold`); groups smaller than `min_support` are left out. Largest first."""
    n = len(vectors)
    if n < max(2, min_support):
        return []
    from sklearn.cluster import AgglomerativeClustering

    norms = np.linalg.norm(vectors, axis=1)
    usable = np.flatnonzero(norms > 0)
    if len(usable) < max(2, min_support):
        return []
    labels = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=threshold
    ).fit_predict(vectors[usable])
    groups: dict[int, list[int]] = {}
    for row, label in zip(usable, labels, strict=True):
        groups.setdefault(int(label), []).append(int(row))
    out = [sorted(g) for g in groups.values() if len(g) >= min_support]
    return sorted(out, key=lambda g: (-len(g), g[0]))


def uncovered(analyses: Sequence[Analysis]) -> list[Analysis]:
    return [a for a in analyses if not a.covered_by]


def naming_messages(taxonomy: PromptTaxonomy, group: Sequence[Analysis]) -> list[dict[str, str]]:
    lines = []
    for a in list(group)[:MAX_GROUP_SHOWN]:
        quotes = "; ".join(f'step {q.step}: "{q.text}"' for q in a.quotes)
        lines.append(f"- trace {a.external_id}, steps {list(a.steps)}: {a.what}\n  quotes: {quotes}")
    system = "\n\n".join([NAME_INSTRUCTIONS, render_taxonomy(taxonomy), NAME_CONTRACT])
    user = f"Analyses ({len(group)} traces):\n" + "\n".join(lines) + "\n\nNow answer with the JSON object."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_candidate(text: str, group: Sequence[Analysis]) -> Candidate:
    """The candidate a naming answer defines; examples name traces by their id as shown to the model."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise MalformedAnswer("the answer must be a JSON object")
    code = _text(data.get("code"), '"code"', 20)
    if not CODE.match(code):
        raise MalformedAnswer('"code" must be a letter then letters, digits, ".", "_" or "-" (at most 20)')
    by_external = {a.external_id: a.trace for a in group}
    examples = []
    for n, item in enumerate(data.get("examples") or [], 1):
        if not isinstance(item, dict) or str(item.get("trace")) not in by_external:
            raise MalformedAnswer(f"example {n} must name a trace of the analyses shown")
        step = item.get("step")
        if isinstance(step, str) and step.strip().isdigit():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            raise MalformedAnswer(f"example {n} needs a step number")
        examples.append(
            {
                "trace": by_external[str(item["trace"])],
                "external_id": str(item["trace"]),
                "step": step,
                "quote": _text(item.get("quote"), f"example {n}'s quote", MAX_QUOTE),
            }
        )
    return Candidate(
        code=code,
        name=_text(data.get("name"), '"name"', 200),
        definition=_text(data.get("definition"), '"definition"', MAX_TEXT),
        when_to_use=str(data.get("when_to_use") or "").strip()[:MAX_TEXT],
        when_not_to_use=str(data.get("when_not_to_use") or "").strip()[:MAX_TEXT],
        examples=examples,
        support=len({a.trace for a in group}),
    )


# --- (c) consolidation ---


@dataclass(frozen=True)
class Dropped:
    code: str
    name: str
    reason: str
    mode: str = ""  # the current mode it restates, or the candidate it was merged into

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "name": self.name, "reason": self.reason, "mode": self.mode}


def unverified_example(candidate: Candidate, steps: Mapping[tuple[int, int], str]) -> str:
    """Why the candidate's examples do not hold ("" when every quote is found verbatim in the step it
    cites). `steps`: (trace id, step index) -> the step's text as the model saw it."""
    if len(candidate.examples) < MIN_EXAMPLES:
        return f"only {len(candidate.examples)} examples (at least {MIN_EXAMPLES} are needed)"
    for example in candidate.examples:
        content = steps.get((example["trace"], example["step"]))
        if content is None:
            return f"example in trace {example['external_id']} cites step {example['step']}, which it does not have"
        if example["quote"] not in content:
            return (
                f"the quote {example['quote'][:80]!r} is not in step {example['step']} "
                f"of trace {example['external_id']}"
            )
    return ""


def _similarity(texts: Sequence[str]) -> np.ndarray:
    v = tfidf_vectors(texts)
    return v @ v.T


def consolidate(
    candidates: Sequence[Candidate],
    steps: Mapping[tuple[int, int], str],
    modes: Sequence[tuple[str, str]],
    *,
    duplicate_at: float = 0.5,
    restates_at: float = 0.3,
) -> tuple[list[Candidate], list[Dropped]]:
    """The candidates that survive, and what was dropped and why. `modes`: (code, "name definition") of
    the current modes. In order: quotes checked verbatim, restatements of a current mode dropped (the most
    similar mode named), near duplicates merged into the candidate with more support (examples joined)."""
    kept: list[Candidate] = []
    dropped: list[Dropped] = []
    current_codes = {code for code, _ in modes}
    for c in candidates:
        why = unverified_example(c, steps)
        if why:
            dropped.append(Dropped(c.code, c.name, f"quote not verified: {why}"))
        else:
            kept.append(c)
    if kept and modes:
        texts = [f"{c.name} {c.definition}" for c in kept] + [text for _, text in modes]
        sim = _similarity(texts)[: len(kept), len(kept) :]
        survivors = []
        for i, c in enumerate(kept):
            j = int(np.argmax(sim[i]))
            if sim[i, j] >= restates_at or c.code in current_codes:
                mode = modes[j][0] if c.code not in current_codes else c.code
                dropped.append(Dropped(c.code, c.name, f"restates the current mode {mode}", mode))
            else:
                survivors.append(c)
        kept = survivors
    kept.sort(key=lambda c: -c.support)
    if len(kept) > 1:
        sim = _similarity([f"{c.name} {c.definition}" for c in kept])
        merged: list[Candidate] = []
        for i, c in enumerate(kept):
            into = next((m for m in merged if sim[i, kept.index(m)] >= duplicate_at), None)
            if into is None:
                merged.append(c)
                continue
            into.examples.extend(e for e in c.examples if e not in into.examples)
            into.support += c.support
            dropped.append(Dropped(c.code, c.name, f"a near duplicate of {into.code}: merged", into.code))
        kept = merged
    seen: set[str] = set()
    for c in kept:  # two groups may get the same code from the model
        base, n = c.code, 2
        while c.code in seen:
            c.code, n = f"{base}-{n}", n + 1
        seen.add(c.code)
    return kept, dropped
