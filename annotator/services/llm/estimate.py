"""What a run would cost, before it spends anything: its requests, prompt tokens and, with prices, money.

The estimate builds the very messages a run sends (annotator.llm.windows.window_messages with the project's
taxonomy, current prompt version and long-trace settings: one request per trace, or one per window) and
counts them as the client counts an answer without `usage` (annotator.llm.client.estimate_tokens: about 4
characters a token). So its request count is exact and its prompt tokens are what the client would book;
a real tokenizer differs by some percent. Completion tokens are an upper bound: every request answered
with `max_tokens`. Not included: the second request after a malformed answer (with the bad answer and the
correction appended), since how often a model errs is not known in advance, and traces the model already
labelled in the project (a run skips them; they are counted as `skipped`).

Traces and steps are streamed (two server-side cursors, steps in trace order), so memory holds one trace
at a time whatever the batch's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth import get_user_model

from annotator.llm.client import estimate_tokens, message_chars
from annotator.llm.windows import window_messages
from annotator.models import Annotation, Project
from annotator.raters import llm_username
from annotator.services.llm.config import current_prompt
from annotator.services.llm.labeller import (
    STEP_FIELDS,
    TRACE_FIELDS,
    long_trace_options,
    project_taxonomy,
    prompt_trace_of,
)
from annotator.services.llm.runs import check_run_request, endpoint_snapshot, run_selection
from traces.models import Step, Trace

MILLION = Decimal(1_000_000)
CENT = Decimal("0.0001")
CHUNK = 2_000


@dataclass(frozen=True)
class RunEstimate:
    model: str
    batch: str
    prompt_version: int
    traces: int  # the traces the run covers
    skipped: int  # already labelled by this model in the project: no request
    requests: int  # one per trace asked, or one per window
    windowed_traces: int
    prompt_tokens: int  # estimated, as the client counts them
    max_completion_tokens: int  # requests x max_tokens: an upper bound
    max_tokens: int
    prompt_price_per_million: Decimal | None
    completion_price_per_million: Decimal | None

    @property
    def asked(self) -> int:
        """The traces the run would ask about."""
        return self.traces - self.skipped

    @property
    def priced(self) -> bool:
        return self.prompt_price_per_million is not None and self.completion_price_per_million is not None

    @property
    def prompt_cost(self) -> Decimal | None:
        if not self.priced:
            return None
        return (self.prompt_tokens * self.prompt_price_per_million / MILLION).quantize(CENT)

    @property
    def max_completion_cost(self) -> Decimal | None:
        if not self.priced:
            return None
        return (self.max_completion_tokens * self.completion_price_per_million / MILLION).quantize(CENT)

    @property
    def max_cost(self) -> Decimal | None:
        """The prompt's estimated cost plus the completions' upper bound (None without both prices)."""
        if not self.priced:
            return None
        return self.prompt_cost + self.max_completion_cost

    def as_dict(self) -> dict:
        return {
            "model": self.model,
            "batch": self.batch,
            "prompt_version": self.prompt_version,
            "traces": self.traces,
            "skipped": self.skipped,
            "requests": self.requests,
            "windowed_traces": self.windowed_traces,
            "prompt_tokens": self.prompt_tokens,
            "max_completion_tokens": self.max_completion_tokens,
            "max_tokens": self.max_tokens,
            "prompt_price_per_million": self.prompt_price_per_million,
            "completion_price_per_million": self.completion_price_per_million,
            "prompt_cost": self.prompt_cost,
            "max_completion_cost": self.max_completion_cost,
            "max_cost": self.max_cost,
        }


def estimate_run(project: Project, batch_name: str, limit: int | None, model: str | None) -> RunEstimate:
    """The estimate of the run `do_start_run` would start with these arguments; LLMRunError as it would
    (no model, no such batch, a bad limit). Calls nothing and writes nothing."""
    batch, config, model = check_run_request(
        project, batch_name=batch_name, limit=limit, model=model, check_url=False
    )
    taxonomy, _ = project_taxonomy(project)
    template = current_prompt(project)
    options = long_trace_options(endpoint_snapshot(config, model))
    selection = run_selection(project, batch.pk, limit)
    labelled = _already_labelled(project, model, selection)
    traces = skipped = requests = windowed = prompt_tokens = 0
    for trace, steps in traces_with_steps(selection):
        traces += 1
        if trace.pk in labelled:
            skipped += 1
            continue
        windows = window_messages(taxonomy, prompt_trace_of(trace, steps), template.instructions, **options)
        requests += len(windows)
        windowed += len(windows) > 1
        prompt_tokens += sum(estimate_tokens(message_chars(window.messages)) for window in windows)
    return RunEstimate(
        model=model,
        batch=batch.name,
        prompt_version=template.number,
        traces=traces,
        skipped=skipped,
        requests=requests,
        windowed_traces=windowed,
        prompt_tokens=prompt_tokens,
        max_completion_tokens=requests * config.max_tokens,
        max_tokens=config.max_tokens,
        prompt_price_per_million=config.prompt_price_per_million,
        completion_price_per_million=config.completion_price_per_million,
    )


def _already_labelled(project: Project, model: str, selection) -> set[int]:
    """Traces of the selection the model's rater has submitted in this project (a run skips them). The
    rater is looked up, never created: an estimate writes nothing."""
    rater = get_user_model().objects.filter(username=llm_username(model)).first()
    if rater is None:
        return set()
    return set(
        Annotation.objects.in_project(project)
        .filter(
            assignment__annotator=rater,
            assignment__trace_id__in=selection,
            status=Annotation.Status.SUBMITTED,
        )
        .values_list("assignment__trace_id", flat=True)
    )


def traces_with_steps(selection) -> Iterator[tuple[Trace, list[Step]]]:
    """Each trace of the selection (in id order) with its steps (in index order), one trace in memory."""
    traces = Trace.objects.filter(pk__in=selection).order_by("id").only(*TRACE_FIELDS).iterator(CHUNK)
    steps = (
        Step.objects.filter(trace_id__in=selection)
        .order_by("trace_id", "index")
        .only("trace_id", *STEP_FIELDS)
        .iterator(CHUNK)
    )
    pending = next(steps, None)
    for trace in traces:
        own: list[Step] = []
        while pending is not None and pending.trace_id <= trace.pk:
            if pending.trace_id == trace.pk:
                own.append(pending)
            pending = next(steps, None)
        yield trace, own
