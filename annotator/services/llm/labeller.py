"""Ask the model about one trace: the prompt from the project's taxonomy and prompt version, the client
built from the settings, one retry on a malformed answer, and storing valid labels as an annotation.

Used by annotator.services.llm.runs (the run loop) and the llm_annotate command's --dry-run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.core.cache import cache

from annotator.llm.client import ChatClient, Endpoint, LLMConfigError, LLMError, LLMUnavailable, RateLimiter
from annotator.llm.parse import MalformedAnswer, ParsedAnswer, parse_answer
from annotator.llm.prompt import (
    MIN_BUDGET,
    PromptStep,
    PromptTaxonomy,
    PromptTrace,
    build_messages,
    correction_messages,
)
from annotator.models import Annotation, LLMConfig, LLMRun, LLMTraceResult, Project, PromptTemplate
from annotator.services.label_import import IncomingAnnotation, LabelImportResult, _store
from annotator.services.llm.config import get_config
from taxonomy.models import FailureMode
from taxonomy.services import version_to_spec
from traces.importers.records import AnnotationRecord, LabelRecord
from traces.models import Step, Trace


def project_taxonomy(project: Project) -> tuple[PromptTaxonomy, dict[str, FailureMode]]:
    version = project.taxonomy_version
    modes = {mode.code: mode for mode in FailureMode.objects.filter(version=version)}
    return PromptTaxonomy.from_spec(version_to_spec(version)), modes


def prompt_trace(trace: Trace) -> PromptTrace:
    steps = Step.objects.filter(trace=trace).order_by("index")
    return PromptTrace(
        external_id=trace.external_id,
        task=trace.task,
        system=trace.system,
        outcome=trace.outcome,
        steps=[
            PromptStep(s.index, s.agent, s.role, s.kind, s.tool_name, s.tool_args, s.content)
            for s in steps.only("index", "agent", "role", "kind", "tool_name", "tool_args", "content")
        ],
    )


def messages_for(project: Project, trace: Trace, *, template: PromptTemplate, budget: int) -> list[dict]:
    """The exact messages a run sends for `trace` (the CLI's --dry-run prints them)."""
    taxonomy, _ = project_taxonomy(project)
    return build_messages(
        taxonomy, prompt_trace(trace), template.instructions, budget=max(budget, MIN_BUDGET)
    )


@dataclass
class Outcome:
    status: str
    answer: ParsedAnswer | None = None
    attempts: int = 0
    tokens: list[int] = field(default_factory=lambda: [0, 0, 0])
    raw: str = ""
    error: str = ""
    unavailable: bool = False


@dataclass(frozen=True)
class Request:
    """Everything needed to ask about one trace, read from the database beforehand: `Labeller.ask` sends it
    without touching the ORM, so a run can ask about many traces at once from a thread pool."""

    trace_id: int
    external_id: str
    n_steps: int
    messages: list[dict]


class Labeller:
    """Asks the model about traces with the run's taxonomy and prompt: `prepare` reads a trace (ORM, the
    caller's thread), `ask` sends it and parses the answer (HTTP only; safe to call from many threads)."""

    def __init__(self, run: LLMRun, client: ChatClient):
        self.run, self.client = run, client
        self.taxonomy, self.modes = project_taxonomy(run.project)
        self.budget = int(run.endpoint.get("max_trace_chars") or 60_000)

    def _ask(self, outcome: Outcome, messages: list[dict]) -> str:
        completion = self.client.complete(messages)
        outcome.attempts += 1
        for i, value in enumerate(
            (completion.prompt_tokens, completion.completion_tokens, completion.total_tokens)
        ):
            outcome.tokens[i] += value
        outcome.raw = completion.text
        return completion.text

    def prepare(self, trace: Trace) -> Request:
        prompt = prompt_trace(trace)
        messages = build_messages(self.taxonomy, prompt, self.run.prompt.instructions, budget=self.budget)
        indices = [step.index for step in prompt.steps]
        n_steps = max(indices[-1] + 1 if indices else 0, trace.step_count)
        return Request(trace.pk, trace.external_id, n_steps, messages)

    def ask(self, request: Request) -> Outcome:
        """The outcome for one prepared trace: one retry on a malformed answer (with the reason shown to the
        model), transient trouble recorded as a failure; LLMConfigError (the settings are wrong) propagates."""

        def parse(text: str) -> ParsedAnswer:
            return parse_answer(
                text,
                codes=self.taxonomy.codes,
                n_steps=request.n_steps,
                single_primary=self.taxonomy.single_primary,
            )

        messages = request.messages
        outcome = Outcome(status=LLMTraceResult.Status.FAILED)
        try:
            text = self._ask(outcome, messages)
            try:
                outcome.answer = parse(text)
            except MalformedAnswer as first:
                retry = self._ask(outcome, messages + correction_messages(text, str(first)))
                try:
                    outcome.answer = parse(retry)
                except MalformedAnswer as second:
                    outcome.error = f"malformed answer, twice: {first}; on retry: {second}"
        except LLMConfigError:
            raise
        except LLMError as error:
            outcome.error = self.client.redact(str(error))
            outcome.unavailable = isinstance(error, LLMUnavailable)
        if outcome.answer is not None:
            outcome.status = LLMTraceResult.Status.DONE
        return outcome

    def label(self, trace: Trace) -> Outcome:
        return self.ask(self.prepare(trace))


def limiter_key(config: LLMConfig) -> str:
    """Every run and worker of one settings row shares its rate and its pause under this key."""
    return f"cfg{config.pk}"


def make_client(
    run: LLMRun,
    *,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.time,
    transport: httpx.BaseTransport | None = None,
    max_retries: int = 4,
) -> ChatClient:
    """The run's client. `sleep` None: real waits that a `cancel()` ends early (the run's stop button)."""
    config = get_config(run.project)
    snapshot = run.endpoint
    endpoint = Endpoint(
        base_url=snapshot["base_url"],
        model=run.model,
        api_key=config.api_key(snapshot["base_url"]),
        temperature=snapshot.get("temperature", 0.0),
        max_tokens=snapshot.get("max_tokens", 1024),
        timeout=snapshot.get("timeout_seconds", 120.0),
        json_mode=snapshot.get("json_mode", True),
        requests_per_minute=snapshot.get("requests_per_minute", 60),
    )
    # Keyed by the settings row: every run and worker of this endpoint shares one rate and one pause.
    limiter = RateLimiter(
        limiter_key(config), endpoint.requests_per_minute, counter=cache, clock=clock, sleep=sleep
    )
    return ChatClient(
        endpoint,
        limiter=limiter,
        sleep=sleep,
        clock=clock,
        transport=transport,
        max_retries=max_retries,
        allowed_base_urls=settings.LLM_ALLOWED_BASE_URLS,
    )


def store_answer(
    run: LLMRun, trace: Trace, answer: ParsedAnswer, modes: dict[str, FailureMode]
) -> Annotation:
    record = AnnotationRecord(
        annotator=run.rater.username,
        labels=[
            LabelRecord(mode=label.code, steps=list(label.steps), primary=label.primary, note=label.reason)
            for label in answer.labels
        ],
        no_failure=answer.no_failure,
        note=answer.note,
    )
    labels = [(modes[label.mode], label) for label in record.labels]
    item = IncomingAnnotation(trace=trace, record=record, where=f"LLM run {run.pk}")
    return _store(run.project, item, run.rater, labels, LabelImportResult(), None, action="llm")
