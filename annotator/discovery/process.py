"""Process a discovery or gate run: its phases in order, each a flight of model requests.

- analyse (discovery only): one item per trace of the induction sample (annotator.discovery.induce): one
  request, or one per window of a trace over the budget (the LLM rater's long-trace setting);
- embed (only with an embeddings model): the uncovered analyses' texts sent to the endpoint's /embeddings
  in batches, each batch's vectors kept as it arrives (annotator.discovery.embedding); the progress counts
  batches;
- name: the uncovered analyses grouped (TF-IDF, or those vectors), one request per group, then
  consolidation by code;
- gate: every rater model applies the current modes plus the candidates to every held-out trace, with the
  LLM rater's prompt and answer format (annotator.services.llm.labeller.Labeller: windows for long traces,
  one retry on a malformed answer), each request carrying its rater's model name; then the statistics
  (annotator.discovery.gate_stats).

Every answer is a DiscoveryAnswer row keyed (run, phase, rater, key): a stopped or resumed run asks only
what has no row, and a redelivered task finds the rows already there. Requests go through the project's
client (annotator.llm.client: shared rate limit, Retry-After, cancel) in the flight loop every model run
shares (annotator.services.llm.flight: `concurrency` in flight). The owner's stop and the token cap are
checked before every request and every embedding batch (whose tokens count); a configuration error, or
UNAVAILABLE_LIMIT answers in a row that found the endpoint unavailable, fail the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotator.discovery import embedding, induce
from annotator.discovery.asks import Ask, GateLabeller, Reply, analysis_call, gate_call, json_call
from annotator.discovery.gate_stats import RaterAnswer, gate
from annotator.discovery.results import long_trace_counts
from annotator.llm.client import (
    ChatClient,
    LLMCancelled,
    LLMConfigError,
    LLMError,
    LLMUnavailable,
)
from annotator.llm.prompt import PromptMode, PromptTaxonomy
from annotator.models import DiscoveryAnswer, DiscoveryRun, PromptTemplate
from annotator.services.jobs import heartbeat
from annotator.services.llm.flight import TOKEN_CAP_REACHED, Flight
from annotator.services.llm.labeller import (
    long_trace_options,
    make_client,
    project_taxonomy,
    prompt_trace,
)
from traces.models import Step, Trace

log = logging.getLogger(__name__)

LOCK_SECONDS = 900


def finish(run_id: int, status: str, *, reason: str = "", error: str = "") -> None:
    DiscoveryRun.objects.filter(pk=run_id, status=DiscoveryRun.Status.RUNNING).update(
        status=status, stop_reason=reason, error=error[:2_000], finished_at=timezone.now()
    )


def _lock_key(run_id: int) -> str:
    return f"discovery-lock:{run_id}"


def do_process_discovery(run_id: int, **client_options) -> DiscoveryRun:
    """Carry the run through its remaining phases until it is done, stopped or failed. A second worker
    handed the same run returns at once (a per-run cache lock). `client_options` (sleep, clock, transport)
    go to the HTTP clients; tests and the bench inject them."""
    if not cache.add(_lock_key(run_id), "1", timeout=LOCK_SECONDS):
        return DiscoveryRun.objects.get(pk=run_id)
    try:
        if DiscoveryRun.claim(run_id):
            with heartbeat(DiscoveryRun, run_id):
                _Phases(DiscoveryRun.objects.select_related("project").get(pk=run_id), client_options).go()
    finally:
        cache.delete(_lock_key(run_id))
    return DiscoveryRun.objects.get(pk=run_id)


class _Phases:
    def __init__(self, run: DiscoveryRun, client_options: dict):
        self.run, self.client_options = run, client_options
        self.taxonomy, _ = project_taxonomy(run.project)

    def go(self) -> None:
        run = self.run
        try:
            if run.phase == DiscoveryRun.Phase.ANALYSE:
                if not self._fly(self._analysis_asks(), {run.model}):
                    return
                self._set_phase(DiscoveryRun.Phase.NAME)
            if run.phase in (DiscoveryRun.Phase.EMBED, DiscoveryRun.Phase.NAME):
                groups = self._groups()
                if groups is None or not self._fly(self._naming_asks(groups), {run.model}):
                    return
                self._consolidate(groups)
                self._set_phase(DiscoveryRun.Phase.GATE)
            if run.phase == DiscoveryRun.Phase.GATE:
                if run.candidates and not self._fly(self._gate_asks(), set(run.raters)):
                    return
                self._gate()
                self._set_phase(DiscoveryRun.Phase.DONE)
            finish(run.pk, DiscoveryRun.Status.SUCCEEDED)
        except LLMConfigError as error:
            finish(run.pk, DiscoveryRun.Status.FAILED, error=str(error))
        except LLMError as error:  # the embeddings request, which has no per-item retry of its own
            finish(run.pk, DiscoveryRun.Status.FAILED, error=f"embeddings: {error}")

    def _set_phase(self, phase: str, **fields: Any) -> None:
        self.run.phase = phase
        for name, value in fields.items():
            setattr(self.run, name, value)
        DiscoveryRun.objects.filter(pk=self.run.pk).update(phase=phase, done=0, failed=0, total=0, **fields)

    # --- the requests of each phase ---

    def _answered(self, phase: str) -> set[tuple[str, str]]:
        return set(self.run.answers.filter(phase=phase).values_list("rater", "key"))

    def _analysis_asks(self) -> Iterator[Ask]:
        run, done = self.run, self._answered(DiscoveryAnswer.Phase.ANALYSE)
        options = long_trace_options(run.endpoint)
        codes = self.taxonomy.codes
        pending = [pk for pk in run.induction_ids if (run.model, str(pk)) not in done]
        self._total(len(run.induction_ids), len(run.induction_ids) - len(pending))
        for trace in Trace.objects.filter(pk__in=pending).order_by("pk"):
            requests = induce.analysis_requests(self.taxonomy, prompt_trace(trace), **options)
            yield Ask("analyse", run.model, str(trace.pk), trace.pk, analysis_call(trace, requests, codes))

    def _analyses(self) -> list[induce.Analysis]:
        rows = self.run.answers.filter(phase=DiscoveryAnswer.Phase.ANALYSE, ok=True).order_by("trace_id")
        return [induce.Analysis.from_dict(a) for row in rows for a in row.answer.get("failures", [])]

    def _groups(self) -> list[list[induce.Analysis]] | None:
        """The uncovered analyses grouped by their words (TF-IDF), or by the endpoint's embeddings when the
        owner set an embedding model (the run's embedding phase, annotator.discovery.embedding). Kept with
        the run once computed, so a resumed run names the same groups. None when the run was stopped or
        capped while embedding: the batches embedded so far are kept, and a resume sends only the others."""
        loose = induce.uncovered(self._analyses())
        stored = (self.run.results or {}).get("groups")
        if stored is None:
            model = self.run.endpoint.get("embeddings_model") or ""
            texts = [a.text for a in loose]
            if not loose:
                rows = []
            elif model:
                if self.run.phase != DiscoveryRun.Phase.EMBED:
                    self._set_phase(DiscoveryRun.Phase.EMBED)
                vectors = self._embed(texts, model)
                if vectors is None:
                    return None
                rows = induce.group_vectors(vectors, threshold=induce.EMBEDDING_THRESHOLD)
            else:
                rows = induce.group_vectors(induce.tfidf_vectors(texts))
            stored = [list(group) for group in rows]
            self.run.results = {
                "groups": stored,
                "grouped_by": f"embeddings ({model})" if model else "tf-idf",
                "long_traces": long_trace_counts(self.run),
            }
            with transaction.atomic():
                DiscoveryRun.objects.filter(pk=self.run.pk).update(results=self.run.results)
                embedding.forget(self.run)
        if self.run.phase == DiscoveryRun.Phase.EMBED:
            self._set_phase(DiscoveryRun.Phase.NAME)
        return [[loose[i] for i in group] for group in stored]

    def _embed(self, texts: list[str], model: str):
        """Unit vectors from the endpoint's /embeddings, the batches kept from before read back and the
        others asked (annotator.discovery.embedding). Every batch's tokens count, and before each the owner's
        stop and the token cap are checked as before any other request: None then."""
        with make_client(_Shim(self.run, model), **self.client_options) as client:
            return embedding.embed_missing(
                self.run,
                texts,
                model,
                client,
                may_go_on=lambda: _may_go_on(self.run),
                touch=lambda: cache.touch(_lock_key(self.run.pk), LOCK_SECONDS),
            )

    def _naming_asks(self, groups: list[list[induce.Analysis]]) -> Iterator[Ask]:
        run, done = self.run, self._answered(DiscoveryAnswer.Phase.NAME)
        self._total(len(groups), sum((run.model, str(n)) in done for n in range(len(groups))))
        for n, group in enumerate(groups):
            if (run.model, str(n)) in done:
                continue
            messages = induce.naming_messages(self.taxonomy, group)

            def parse(text: str, group=group) -> dict:
                return induce.parse_candidate(text, group).as_dict()

            yield Ask("name", run.model, str(n), None, json_call([("", messages, parse)]))

    def _consolidate(self, groups: list[list[induce.Analysis]]) -> None:
        rows = self.run.answers.filter(phase=DiscoveryAnswer.Phase.NAME, ok=True).order_by("id")
        named = []
        for row in rows:
            data = row.answer
            fields = {k: data[k] for k in ("code", "name", "definition", "when_to_use", "when_not_to_use")}
            named.append(induce.Candidate(**fields, examples=list(data["examples"]), support=data["support"]))
        cited = {(e["trace"], e["step"]) for c in named for e in c.examples}
        modes = [(m.code, f"{m.name} {m.definition}") for m in self.taxonomy.modes]
        kept, dropped = induce.consolidate(named, _step_texts(cited, self.run.induction_ids), modes)
        self._set_phase(
            DiscoveryRun.Phase.NAME,
            candidates=[c.as_dict() for c in kept],
            dropped=[d.as_dict() for d in dropped],
        )

    def _gate_taxonomy(self) -> PromptTaxonomy:
        extra = tuple(
            PromptMode(c["code"], c["name"], c["definition"], c.get("guidance", ""))
            for c in self.run.candidates
        )
        return PromptTaxonomy(self.taxonomy.name, self.taxonomy.single_primary, self.taxonomy.modes + extra)

    def _gate_asks(self) -> Iterator[Ask]:
        run, done = self.run, self._answered(DiscoveryAnswer.Phase.GATE)
        raters = list(run.raters)
        self._total(len(run.held_ids) * len(raters), len(done))
        taxonomy = self._gate_taxonomy()
        variants = run.endpoint.get("rater_prompts") or {}
        texts = dict(
            PromptTemplate.objects.filter(project=run.project, number__in=set(variants.values())).values_list(
                "number", "instructions"
            )
        )
        # One labeller per prompt text: raters sharing a prompt share the trace's prepared request.
        prompt_of = {r: texts.get(variants.get(r), run.instructions) for r in raters}
        labellers = {text: GateLabeller(run, taxonomy, text) for text in set(prompt_of.values())}
        for trace in Trace.objects.filter(pk__in=run.held_ids).order_by("pk"):
            todo = [r for r in raters if (r, str(trace.pk)) not in done]
            requests = {text: labellers[text].prepare(trace) for text in {prompt_of[r] for r in todo}}
            for rater in todo:
                call = gate_call(labellers[prompt_of[rater]], requests[prompt_of[rater]])
                yield Ask("gate", rater, str(trace.pk), trace.pk, call)

    def _gate(self) -> None:
        run = self.run
        answers = []
        for row in run.answers.filter(phase=DiscoveryAnswer.Phase.GATE, ok=True):
            labels = row.answer.get("labels", [])
            answers.append(
                RaterAnswer(
                    trace=row.trace_id,
                    rater=row.rater,
                    codes=frozenset(label["code"] for label in labels),
                    steps={label["code"]: tuple(label["steps"]) for label in labels},
                    reasons={label["code"]: label["reason"] for label in labels},
                )
            )
        traces = sorted(int(pk) for pk in run.held_ids)
        failed = list(Trace.objects.filter(pk__in=traces, outcome="failure").values_list("pk", flat=True))
        results = gate(
            answers,
            traces=traces,
            failed=failed,
            raters=list(run.raters),
            candidates=[c["code"] for c in run.candidates],
            current=list(self.taxonomy.codes),
            kappa_min=run.kappa_min,
            coverage_min=run.coverage_min,
        )
        for kept in ("grouped_by", "long_traces"):
            results[kept] = (run.results or {}).get(kept, "" if kept == "grouped_by" else {})
        DiscoveryRun.objects.filter(pk=run.pk).update(results=results)
        run.results = results

    # --- flying ---

    def _total(self, total: int, done: int) -> None:
        DiscoveryRun.objects.filter(pk=self.run.pk).update(total=total, done=done, failed=0)

    def _fly(self, asks: Iterator[Ask], models: set[str]) -> bool:
        """Send the asks, `concurrency` at a time; True when every one was answered (or failed), False
        when the run was stopped, capped or failed meanwhile."""
        # A rater MODEL@vN (a prompt variant) asks MODEL.
        clients = {
            m: make_client(_Shim(self.run, m.partition("@")[0]), **self.client_options) for m in models
        }
        try:
            return _Flight(self.run, clients).fly(asks)
        finally:
            for client in clients.values():
                client.close()


class _Shim(SimpleNamespace):
    """What make_client reads of a run: its project, endpoint snapshot and model."""

    def __init__(self, run: DiscoveryRun, model: str):
        super().__init__(project=run.project, endpoint=run.endpoint, model=model)


def _step_texts(cited: set[tuple[int, int]], allowed: list[int]) -> dict[tuple[int, int], str]:
    """(trace, step) -> the step's text as the model saw it (content and tool arguments), for the traces
    the induction read."""
    allowed_set = {int(pk) for pk in allowed}
    traces = {t for t, _ in cited if t in allowed_set}
    out = {}
    for step in Step.objects.filter(trace_id__in=traces).only("trace_id", "index", "content", "tool_args"):
        if (step.trace_id, step.index) in cited:
            args = (
                step.tool_args
                if isinstance(step.tool_args, str)
                else ("" if step.tool_args in (None, {}, []) else str(step.tool_args))
            )
            out[(step.trace_id, step.index)] = f"{args}\n{step.content or ''}"
    return out


def _may_go_on(run: DiscoveryRun) -> bool:
    """Whether the run may send one more request: still running (not stopped by the owner) and under its
    token cap (reaching it ends the run as stopped, like an LLM run)."""
    status, used = DiscoveryRun.objects.filter(pk=run.pk).values_list("status", "tokens_used").get()
    if status != DiscoveryRun.Status.RUNNING:
        return False
    if run.token_cap and used >= run.token_cap:
        finish(run.pk, DiscoveryRun.Status.STOPPED, reason=TOKEN_CAP_REACHED)
        return False
    return True


class _Flight(Flight[Ask]):
    """A phase's asks in the shared flight loop (annotator.services.llm.flight); each answer recorded by
    this thread as it arrives. A stop, the token cap, a configuration error or UNAVAILABLE_LIMIT answers in
    a row that found the endpoint unavailable end the sending (the last two fail the run)."""

    def __init__(self, run: DiscoveryRun, clients: dict[str, ChatClient]):
        super().__init__(
            concurrency=int(run.endpoint.get("concurrency") or 1),
            thread_name=f"discovery-{run.pk}",
            clients=list(clients.values()),
            lock_key=_lock_key(run.pk),
            lock_seconds=LOCK_SECONDS,
        )
        self.run, self.by_rater = run, clients

    def may_send(self) -> bool:
        if self.sending and not _may_go_on(self.run):
            self.cancel()
        return self.sending

    def prepare(self, ask: Ask) -> Callable[[], Reply]:
        client = self.by_rater[ask.rater]
        return lambda: ask.call(client)

    def _fail(self, error: str) -> None:
        self.cancel()
        finish(self.run.pk, DiscoveryRun.Status.FAILED, error=error)

    def collect(self, ask: Ask, future: Future) -> None:
        client = self.by_rater[ask.rater]
        try:
            reply = future.result()
        except LLMCancelled:
            return  # never sent: asked again on resume
        except LLMConfigError as error:
            self._fail(client.redact(str(error)))
            return
        except LLMError as error:
            reply = Reply(None, client.redact(str(error)), 0, isinstance(error, LLMUnavailable))
        self._store(ask, reply)
        if self.count_unavailable(reply.unavailable):
            self._fail(f"the endpoint is unavailable: {reply.error}")

    def _store(self, ask: Ask, reply: Reply) -> None:
        with transaction.atomic():
            try:
                with transaction.atomic():
                    DiscoveryAnswer.objects.create(
                        run_id=self.run.pk,
                        phase=ask.phase,
                        rater=ask.rater,
                        key=ask.key,
                        trace_id=ask.trace_id,
                        ok=reply.answer is not None,
                        answer=reply.answer or {},
                        error=reply.error[:2_000],
                        tokens=reply.tokens,
                    )
            except IntegrityError:
                return  # another worker recorded it first
            counter = "done" if reply.answer is not None else "failed"
            DiscoveryRun.objects.filter(pk=self.run.pk).update(
                **{counter: F(counter) + 1},
                tokens_used=F("tokens_used") + reply.tokens,
                heartbeat_at=timezone.now(),
            )
