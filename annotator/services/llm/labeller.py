"""Ask the model about one trace: the prompt from the project's taxonomy and prompt version (one request, or
one per window of a trace over the budget, merged: annotator.llm.windows), the client built from the
settings, one retry on a malformed answer, and storing valid labels as an annotation.

Used by annotator.services.llm.runs (the run loop) and the llm_annotate command's --dry-run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.core.cache import cache

from annotator.llm.client import ChatClient, Endpoint, LLMConfigError, LLMError, LLMUnavailable, RateLimiter
from annotator.llm.parse import MalformedAnswer, ParsedAnswer, parse_answer
from annotator.llm.prompt import MIN_BUDGET, PromptStep, PromptTaxonomy, PromptTrace, correction_messages
from annotator.llm.windows import (
    CUT,
    DEFAULT_OVERLAP,
    PromptWindow,
    check_window,
    merge_answers,
    window_messages,
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


# What the prompt reads of a trace and of its steps (the run estimate streams the same columns).
TRACE_FIELDS = ("id", "external_id", "task", "system", "outcome", "step_count")
STEP_FIELDS = ("index", "agent", "role", "kind", "tool_name", "tool_args", "content")


def prompt_trace_of(trace: Trace, steps: Iterable[Step]) -> PromptTrace:
    """The prompt's view of `trace` with `steps` (Step rows in index order, any iterable)."""
    return PromptTrace(
        external_id=trace.external_id,
        task=trace.task,
        system=trace.system,
        outcome=trace.outcome,
        steps=[
            PromptStep(s.index, s.agent, s.role, s.kind, s.tool_name, s.tool_args, s.content) for s in steps
        ],
    )


def prompt_trace(trace: Trace) -> PromptTrace:
    steps = Step.objects.filter(trace=trace).order_by("index").only(*STEP_FIELDS)
    return prompt_trace_of(trace, steps)


def long_trace_options(endpoint: dict) -> dict:
    """How a run treats traces over its budget, from its endpoint snapshot (or a config's values). A run
    started before windows existed recorded no choice: it keeps the cut it began with, also when resumed."""
    return {
        "budget": max(int(endpoint.get("max_trace_chars") or 60_000), MIN_BUDGET),
        "long_traces": endpoint.get("long_traces", CUT),
        "overlap": int(endpoint.get("window_overlap_steps", DEFAULT_OVERLAP)),
    }


def windows_for(
    project: Project, trace: Trace, *, template: PromptTemplate, config: LLMConfig
) -> list[PromptWindow]:
    """The exact requests a run with `config`'s settings sends for `trace`: one, or one per window."""
    taxonomy, _ = project_taxonomy(project)
    options = long_trace_options(
        {
            "max_trace_chars": config.max_trace_chars,
            "long_traces": config.long_traces,
            "window_overlap_steps": config.window_overlap_steps,
        }
    )
    return window_messages(taxonomy, prompt_trace(trace), template.instructions, **options)


def messages_for(
    project: Project, trace: Trace, *, template: PromptTemplate, config: LLMConfig
) -> list[dict]:
    """The messages of the first request a run sends for `trace` (the CLI's --dry-run prints them)."""
    return windows_for(project, trace, template=template, config=config)[0].messages


@dataclass
class Outcome:
    status: str
    answer: ParsedAnswer | None = None
    attempts: int = 0
    tokens: list[int] = field(default_factory=lambda: [0, 0, 0])
    raw: str = ""
    error: str = ""
    unavailable: bool = False
    windows: int = 0  # the requests the trace was split into (1: it fit in one; 0: not asked, e.g. skipped)
    requests: int = 0  # of those, the ones asked (a failed window ends the trace); retries not counted


@dataclass(frozen=True)
class Request:
    """Everything needed to ask about one trace, read from the database beforehand: `Labeller.ask` sends it
    without touching the ORM, so a run can ask about many traces at once from a thread pool.

    `windows`: the trace's requests with their step ranges (annotator.llm.windows); `messages` is the
    first one's. Empty: one request of `messages` about the whole trace."""

    trace_id: int
    external_id: str
    n_steps: int
    messages: list[dict]
    windows: tuple[PromptWindow, ...] = ()


class Labeller:
    """Asks the model about traces with the run's taxonomy and prompt: `prepare` reads a trace (ORM, the
    caller's thread), `ask` sends it and parses the answer (HTTP only; safe to call from many threads)."""

    def __init__(self, run: LLMRun, client: ChatClient):
        self.run, self.client = run, client
        self.taxonomy, self.modes = project_taxonomy(run.project)
        self.options = long_trace_options(run.endpoint)

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
        windows = window_messages(self.taxonomy, prompt, self.run.prompt.instructions, **self.options)
        indices = [step.index for step in prompt.steps]
        n_steps = max(indices[-1] + 1 if indices else 0, trace.step_count)
        return Request(trace.pk, trace.external_id, n_steps, windows[0].messages, tuple(windows))

    def ask(self, request: Request) -> Outcome:
        """The outcome for one prepared trace: each window in turn (one retry on a malformed answer, with the
        reason shown to the model), the windows' answers merged (annotator.llm.windows.merge_answers). A
        window that fails fails the trace and the rest are not asked: no partial labels. Transient trouble is
        recorded as a failure; LLMConfigError (the settings are wrong) propagates."""
        windows = request.windows or (
            PromptWindow(1, 1, 0, request.n_steps - 1, request.messages),  # a Request built without windows
        )
        outcome = Outcome(status=LLMTraceResult.Status.FAILED, windows=len(windows))
        answers: list[ParsedAnswer] = []
        for window in windows:
            where = f"{window.label}: " if window.windowed else ""
            outcome.requests += 1
            try:
                answer, problem = self._ask_window(outcome, window, request.n_steps)
            except LLMConfigError:
                raise
            except LLMError as error:
                outcome.error = where + self.client.redact(str(error))
                outcome.unavailable = isinstance(error, LLMUnavailable)
                return outcome
            if answer is None:
                outcome.error = where + problem
                return outcome
            answers.append(answer)
        outcome.answer = merge_answers(answers, single_primary=self.taxonomy.single_primary)
        outcome.status = LLMTraceResult.Status.DONE
        return outcome

    def _ask_window(
        self, outcome: Outcome, window: PromptWindow, n_steps: int
    ) -> tuple[ParsedAnswer | None, str]:
        """(the window's answer, "") or (None, why it is malformed, twice)."""

        def parse(text: str) -> ParsedAnswer:
            answer = parse_answer(
                text,
                codes=self.taxonomy.codes,
                n_steps=n_steps,
                single_primary=self.taxonomy.single_primary,
            )
            check_window(answer, window)
            return answer

        text = self._ask(outcome, window.messages)
        try:
            return parse(text), ""
        except MalformedAnswer as first:
            retry = self._ask(outcome, window.messages + correction_messages(text, str(first)))
            try:
                return parse(retry), ""
            except MalformedAnswer as second:
                return None, f"malformed answer, twice: {first}; on retry: {second}"

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
