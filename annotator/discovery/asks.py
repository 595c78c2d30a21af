"""The items a discovery or gate run asks about, and the calls that ask them (in a pool thread: HTTP and
parsing only, no ORM): a trace's analysis (one request, or one per window), a group's naming, a gate
rater's answer (the LLM rater's labeller). Each returns a Reply; annotator.discovery.process records it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple

from annotator.discovery import induce
from annotator.llm.client import ChatClient, LLMConfigError, LLMError, LLMUnavailable
from annotator.llm.parse import MalformedAnswer
from annotator.llm.prompt import PromptTaxonomy, correction_messages
from annotator.models import DiscoveryRun
from annotator.services.llm.labeller import Labeller, long_trace_options
from traces.models import Trace


class Reply(NamedTuple):
    """What one ask got: the answer's JSON (None when it failed, then `error` says why), the tokens it
    spent, and whether it failed because the endpoint was unavailable (the run counts those in a row)."""

    answer: dict | None
    error: str
    tokens: int
    unavailable: bool = False


@dataclass
class Ask:
    """One item of a phase: `call(client)` runs in a pool thread (HTTP only: one request, or one per window
    of a long trace) and returns a Reply; the row is written by the processing thread."""

    phase: str
    rater: str
    key: str
    trace_id: int | None
    call: Callable[[ChatClient], Reply]


class GateLabeller(Labeller):
    """The LLM rater's labeller with the candidates added to the taxonomy, and the project's prompt version
    as the run recorded it. Only prepare/ask are used: its answers are never stored as labels."""

    def __init__(self, run: DiscoveryRun, taxonomy: PromptTaxonomy, instructions: str):
        self.run = SimpleNamespace(prompt=SimpleNamespace(instructions=instructions), endpoint=run.endpoint)
        self.client = None
        self.taxonomy, self.modes = taxonomy, {}
        self.options = long_trace_options(run.endpoint)


def gate_call(labeller: GateLabeller, request) -> Callable[[ChatClient], Reply]:
    """A gate rater's answer on one prepared trace, by the LLM rater's labeller with `client` (the rater's model)."""

    def call(client: ChatClient) -> Reply:
        asker = Labeller.__new__(Labeller)
        asker.run, asker.client, asker.taxonomy = labeller.run, client, labeller.taxonomy
        asker.modes, asker.options = {}, labeller.options
        outcome = asker.ask(request)
        if outcome.answer is None:
            return Reply(None, outcome.error, outcome.tokens[2], outcome.unavailable)
        labels = [
            {"code": label.code, "steps": list(label.steps), "reason": label.reason}
            for label in outcome.answer.labels
        ]
        return Reply({"labels": labels, "summary": outcome.answer.summary}, "", outcome.tokens[2])

    return call


def analysis_call(
    trace: Trace, requests: list[induce.AnalysisRequest], codes: Sequence[str]
) -> Callable[[ChatClient], Reply]:
    """A trace's analysis: its one request, or one per window (each answer citing only its window's
    steps), the windows' failures joined. The answer records how many requests the trace took."""

    def parser(request: induce.AnalysisRequest) -> Callable[[str], list[induce.Analysis]]:
        return lambda text: induce.parse_analysis(
            text, trace=trace.pk, external_id=trace.external_id, steps=request.steps, codes=codes
        )

    def merge(parts: list[list[induce.Analysis]]) -> dict:
        found = induce.merge_analyses(parts)
        return {"failures": [a.as_dict() for a in found], "windows": len(requests), "cut": requests[0].cut}

    return json_call([(r.where, r.messages, parser(r)) for r in requests], merge)


Part = tuple[str, list[dict], Callable[[str], Any]]  # (where, for errors; messages; parse)


def json_call(
    parts: Sequence[Part], merge: Callable[[list], dict] | None = None
) -> Callable[[ChatClient], Reply]:
    """Ask each part in turn (one retry with the reason shown to the model, as the LLM rater does) and
    merge the parsed answers (`merge`; without it, the one part's answer). All or nothing: the first part
    that fails fails the item, and the parts after it are not asked."""

    def call(client: ChatClient) -> Reply:
        spent = [0]
        found = []
        for where, messages, parse in parts:
            try:
                parsed, problem = _ask_json(client, messages, parse, spent)
            except LLMConfigError:
                raise
            except LLMError as error:
                unavailable = isinstance(error, LLMUnavailable)
                return Reply(None, where + client.redact(str(error)), spent[0], unavailable)
            if problem:
                return Reply(None, where + problem, spent[0])
            found.append(parsed)
        return Reply(merge(found) if merge else found[0], "", spent[0])

    return call


def _ask_json(client: ChatClient, messages: list[dict], parse: Callable[[str], Any], spent: list[int]):
    """(the parsed answer, "") or (None, why it is malformed, twice); `spent` counts the tokens."""
    first = client.complete(messages)
    spent[0] += first.total_tokens
    try:
        return parse(first.text), ""
    except MalformedAnswer as problem:
        retry = client.complete(messages + correction_messages(first.text, str(problem)))
        spent[0] += retry.total_tokens
        try:
            return parse(retry.text), ""
        except MalformedAnswer as again:
            return None, f"malformed answer, twice: {problem}; on retry: {again}"
