"""The trace filter language: query parameters in, a frozen `TraceFilter` out, and back (`to_params`).

Pure: no Django, so the page, the API, the CLI and saved views (which store `to_params()`) share one parser
and one set of names. Every error names the parameter it is about (`FilterError.param`), so the API answers
400 with `fields: {param: [...]}` and the page shows the message beside the field.

Parameter names are a public contract (scripts depend on them): see docs/search.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

OUTCOMES = ("success", "failure", "unknown")
STATES = ("unassigned", "in_progress", "complete", "in_adjudication", "gold")
# States that tell about other raters' labels (a disagreement, a decided gold), not only progress.
LABEL_STATES = frozenset({"in_adjudication", "gold"})
STEP_KINDS = ("message", "reasoning", "tool_call", "tool_result", "observation", "error")
# Sortable columns: parameter value -> what it sorts by (the service maps it onto the model).
ORDERINGS = ("external_id", "model", "outcome", "score", "steps", "batch", "created", "rank")
# Parameters whose answer depends on other raters' labels, the gold or answer keys: held back from anyone
# still blind on a trace they would reveal (annotator.search.service).
LABEL_PARAMS = frozenset(
    {
        "gold_mode",
        "human_mode",
        "llm_mode",
        "disputed_mode",
        "evidence_kind",
        "evidence_tool",
        "pair",
        "raters",
        "sig_mode",
        "sig_source",
    }
)

MAX_TEXT = 200
MAX_META = 10
MAX_RATERS = 50  # a report comparing more raters leaves its "Disagree" cells unlinked (agreement_display)
MAX_USERNAME = 150
_MODE_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,39}$")
_META_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}$")


class FilterError(ValueError):
    """A query parameter that cannot be read; `param` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param
        self.message = message


@dataclass(frozen=True)
class TraceFilter:
    batch: str = ""  # a batch's id or name
    benchmark: str = ""
    model: str = ""
    system: str = ""
    outcome: str = ""
    score_min: float | None = None
    score_max: float | None = None
    steps_min: int | None = None
    steps_max: int | None = None
    meta: tuple[tuple[str, str], ...] = ()
    state: str = ""
    gold_mode: str = ""
    human_mode: str = ""
    llm_mode: str = ""
    disputed_mode: str = ""
    evidence_kind: str = ""
    evidence_tool: str = ""
    # Two raters' usernames, "a,b": the traces both submitted (with disputed_mode: where exactly one of the
    # two chose it). What a cell of the agreement report's pair tables opens.
    pair: str = ""
    # Two or more raters' usernames, "a,b,c": the traces at least two of them submitted (with disputed_mode:
    # where one of them chose it and another rated it without choosing it). Two names mean what `pair`
    # does; what a cell of the agreement report's "Disagree" column opens with three raters or more.
    raters: str = ""
    # A mode as the failure signatures count it under a label source (gold, union, agreed, gold+union,
    # annotator:NAME, ...; default gold): what a cell of the signatures' tables opens.
    sig_mode: str = ""
    sig_source: str = ""
    tool: str = ""
    tool_args: str = ""
    q: str = ""
    like: int | None = None  # a trace id: the list ranked by similarity to it (annotator.similar)
    ordering: str = ""

    @property
    def reveals_labels(self) -> bool:
        """True when the answer depends on other raters' labels, the gold or the state of adjudication."""
        return any(getattr(self, name) for name in LABEL_PARAMS) or self.state in LABEL_STATES

    @property
    def label_params(self) -> list[str]:
        """The parameters that make `reveals_labels` true (for the refusal message)."""
        names = [name for name in sorted(LABEL_PARAMS) if getattr(self, name)]
        return names + (["state"] if self.state in LABEL_STATES else [])

    @property
    def on_trace_columns(self) -> bool:
        """Whether a filter reads the traces' own columns (every other filter is a set of trace ids)."""
        return bool(
            self.batch or self.benchmark or self.model or self.system or self.outcome or self.meta
        ) or any(v is not None for v in (self.score_min, self.score_max, self.steps_min, self.steps_max))

    @property
    def active(self) -> bool:
        """Any filter set (ordering alone filters nothing)."""
        return any(getattr(self, f.name) not in ("", None, ()) for f in fields(self) if f.name != "ordering")

    @property
    def terms(self) -> list[str]:
        """The words of `q`, as the search matches them (all must occur in a step)."""
        return query_terms(self.q)

    @property
    def order_key(self) -> tuple[str, bool]:
        """(column, descending); `similarity` with `like`, `rank` (best first) when searching, else id order."""
        if self.like is not None and not self.ordering:
            return "similarity", True
        ordering = self.ordering or ("-rank" if self.q else "")
        if not ordering:
            return "", False
        return ordering.lstrip("-"), ordering.startswith("-")

    def to_params(self) -> list[tuple[str, str]]:
        """The query parameters that parse back to this filter (empty values left out; meta repeated)."""
        out: list[tuple[str, str]] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "meta":
                out.extend(("meta", f"{key}:{val}") for key, val in value)
            elif value not in ("", None):
                out.append((f.name, _number(value) if isinstance(value, float) else str(value)))
        return out

    def with_ordering(self, ordering: str) -> TraceFilter:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return TraceFilter(**{**values, "ordering": ordering})


def query_terms(q: str) -> list[str]:
    return [term for term in q.split() if term][:10]


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _getlist(params: Mapping[str, Any], name: str) -> list[str]:
    getlist = getattr(params, "getlist", None)
    if getlist is not None:
        return [str(v) for v in getlist(name)]
    value = params.get(name)
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def _one(params: Mapping[str, Any], name: str) -> str:
    values = [v.strip() for v in _getlist(params, name)]
    values = [v for v in values if v]
    if len(values) > 1:
        raise FilterError(name, "give it once")
    value = values[0] if values else ""
    if len(value) > MAX_TEXT:
        raise FilterError(name, f"at most {MAX_TEXT} characters")
    if "\x00" in value:
        raise FilterError(name, "contains a NUL character")
    return value


def _choice(params: Mapping[str, Any], name: str, choices: Iterable[str]) -> str:
    value = _one(params, name)
    choices = tuple(choices)
    if value and value not in choices:
        raise FilterError(name, f"'{value}' is not one of: {', '.join(choices)}")
    return value


def _float(params: Mapping[str, Any], name: str) -> float | None:
    value = _one(params, name)
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        raise FilterError(name, f"'{value}' is not a number") from None
    if not math.isfinite(number):
        raise FilterError(name, "must be a finite number")
    return number


def _int(params: Mapping[str, Any], name: str) -> int | None:
    value = _one(params, name)
    if not value:
        return None
    if not re.fullmatch(r"\d{1,9}", value):
        raise FilterError(name, f"'{value}' is not a whole number >= 0")
    return int(value)


def _trace_id(params: Mapping[str, Any], name: str) -> int | None:
    value = _one(params, name)
    if not value:
        return None
    if not re.fullmatch(r"[1-9]\d{0,17}", value):
        raise FilterError(name, f"'{value[:40]}' is not a trace id (a whole number, as in the trace list)")
    return int(value)


def _mode(params: Mapping[str, Any], name: str) -> str:
    value = _one(params, name)
    if value and not _MODE_CODE.match(value):
        raise FilterError(name, f"'{value}' is not a failure mode code (e.g. FM-1.3)")
    return value


def _meta(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for raw in _getlist(params, "meta"):
        raw = raw.strip()
        if not raw:
            continue
        key, sep, value = raw.partition(":")
        if not sep or not _META_KEY.match(key):
            raise FilterError("meta", f"'{raw[:60]}' is not key:value (key of letters, digits, _ . -)")
        if len(value) > MAX_TEXT or "\x00" in value:
            raise FilterError("meta", f"the value of '{key}' is too long or holds a NUL character")
        pairs.append((key, value))
    if len(pairs) > MAX_META:
        raise FilterError("meta", f"at most {MAX_META} key:value pairs")
    return tuple(pairs)


def rater_names(value: str) -> tuple[str, ...]:
    """The usernames of a `pair` or `raters` value ("alice,bob,carol")."""
    return tuple(value.split(",")) if value else ()


def _pair(params: Mapping[str, Any]) -> str:
    value = _one(params, "pair")
    if not value:
        return ""
    names = [name.strip() for name in value.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise FilterError("pair", f"'{value[:60]}' is not two different raters' usernames, a,b")
    if any(len(name) > MAX_USERNAME for name in names):
        raise FilterError("pair", f"a username is at most {MAX_USERNAME} characters")
    return ",".join(names)


def _raters(params: Mapping[str, Any]) -> str:
    # Not `_one`: fifty usernames pass its 200 characters.
    values = [v.strip() for v in _getlist(params, "raters") if v.strip()]
    if not values:
        return ""
    if len(values) > 1:
        raise FilterError("raters", "give it once, the usernames separated by commas")
    value = values[0]
    names = [name.strip() for name in value.split(",", MAX_RATERS)]
    if len(names) > MAX_RATERS:
        raise FilterError("raters", f"at most {MAX_RATERS} raters")
    if len(names) < 2 or not all(names) or len(set(names)) != len(names):
        raise FilterError("raters", f"'{value[:60]}' is not two or more different raters' usernames, a,b,c")
    if any(len(name) > MAX_USERNAME or "\x00" in name for name in names):
        raise FilterError("raters", f"a username is at most {MAX_USERNAME} characters, without NUL")
    return ",".join(names)


def parse(params: Mapping[str, Any]) -> TraceFilter:
    """Read a filter from query parameters (a QueryDict, a dict of strings or of lists). Unknown parameters
    are left alone (`page`, `page_size`, `format` belong to the caller)."""
    ordering = _one(params, "ordering")
    if ordering and ordering.lstrip("-") not in ORDERINGS:
        raise FilterError(
            "ordering", f"'{ordering}' is not one of: {', '.join(ORDERINGS)} (- for descending)"
        )
    q = " ".join(_one(params, "q").split())
    if ordering.lstrip("-") == "rank" and not q:
        raise FilterError("ordering", "rank orders search results: give q too")
    found = TraceFilter(
        batch=_one(params, "batch"),
        benchmark=_one(params, "benchmark"),
        model=_one(params, "model"),
        system=_one(params, "system"),
        outcome=_choice(params, "outcome", OUTCOMES),
        score_min=_float(params, "score_min"),
        score_max=_float(params, "score_max"),
        steps_min=_int(params, "steps_min"),
        steps_max=_int(params, "steps_max"),
        meta=_meta(params),
        state=_choice(params, "state", STATES),
        gold_mode=_mode(params, "gold_mode"),
        human_mode=_mode(params, "human_mode"),
        llm_mode=_mode(params, "llm_mode"),
        disputed_mode=_mode(params, "disputed_mode"),
        evidence_kind=_choice(params, "evidence_kind", STEP_KINDS),
        evidence_tool=_one(params, "evidence_tool"),
        pair=_pair(params),
        raters=_raters(params),
        sig_mode=_mode(params, "sig_mode"),
        sig_source=_one(params, "sig_source"),
        tool=_one(params, "tool"),
        tool_args=_one(params, "tool_args"),
        q=q,
        like=_trace_id(params, "like"),
        ordering=ordering,
    )
    if found.pair and found.raters:
        raise FilterError("raters", "give pair or raters, not both")
    if found.sig_source and not found.sig_mode:
        raise FilterError("sig_source", "says whose labels sig_mode counts: give sig_mode too")
    if found.score_min is not None and found.score_max is not None and found.score_min > found.score_max:
        raise FilterError("score_max", "is below score_min")
    if found.steps_min is not None and found.steps_max is not None and found.steps_min > found.steps_max:
        raise FilterError("steps_max", "is below steps_min")
    return found


# Snippets -------------------------------------------------------------------------------------------------


def snippet(content: str, terms: list[str], *, width: int = 160) -> list[tuple[str, bool]]:
    """A window of `content` around the first hit of any term, as (text, is_hit) segments. The caller
    escapes each segment and marks the hits, so no markup in the content ever reaches the page raw."""
    if not content:
        return []
    lowered = content.lower()
    words = [t.lower() for t in terms if t]
    first = min((i for i in (lowered.find(w) for w in words) if i >= 0), default=0)
    start = max(0, first - width // 3)
    end = min(len(content), start + width)
    window = content[start:end]
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE)
    segments: list[tuple[str, bool]] = []
    if start > 0:
        segments.append(("…", False))
    pos = 0
    for match in pattern.finditer(window) if words else ():
        if match.start() > pos:
            segments.append((window[pos : match.start()], False))
        segments.append((match.group(0), True))
        pos = match.end()
    if pos < len(window):
        segments.append((window[pos:], False))
    if end < len(content):
        segments.append(("…", False))
    return segments


def snippet_text(segments: list[tuple[str, bool]]) -> str:
    return "".join(text for text, _ in segments)
