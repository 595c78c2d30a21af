"""Discovery and gate runs: what they cover, starting, stopping and resuming them (the `do_*` verbs).

The processing (the model's answers, grouping, consolidation, the gate) is annotator.discovery.process; it
runs as a Celery task (`annotator.discovery.run`) or, in the embedded default, in a thread of the web
process, like an LLM run (annotator.services.llm.runs).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, ProjectAccess
from annotator.models import (
    CalibrationRound,
    DiscoveryAnswer,
    DiscoveryRun,
    ModeProposal,
    Project,
    PromptTemplate,
)
from annotator.search.saved import find_view
from annotator.services.llm.config import current_prompt, get_config
from annotator.services.llm.runs import (
    LLMRunError,
    check_run_settings,
    endpoint_snapshot,
    enqueue_on_commit,
    run_in_thread,
    view_run_ids,
)
from annotator.services.proposals import project_proposals, proposal_groups
from annotator.services.rounds import TraceChoice, do_open_round
from traces.models import Trace

log = logging.getLogger(__name__)

DEFAULT_SAMPLE = 200
DEFAULT_GATE_SAMPLE = 100
MAX_SAMPLE = 5_000
MIN_RATERS = 3
MAX_RATERS = 8
MAX_CANDIDATES = 30
SCOPE_KINDS = ("batch", "outcome", "view")
OUTCOMES = ("failure", "success", "unknown")


class DiscoveryError(ValueError):
    """Why a run cannot start (or a request is wrong); shown to the owner as it is."""


def parse_scope(text: str) -> tuple[str, str]:
    """ "batch:NAME", "outcome:failure" or "view:NAME" as (kind, value)."""
    kind, _, value = (text or "").strip().partition(":")
    if kind not in SCOPE_KINDS or not value.strip():
        raise DiscoveryError("Give the scope as batch:NAME, outcome:failure|success|unknown or view:NAME.")
    return kind, value.strip()


def scope_ids(access: ProjectAccess, kind: str, value: str) -> list[int]:
    """The ids of the project's traces the scope selects, in id order."""
    project = access.project
    traces = Trace.objects.in_project(project)
    if kind == "batch":
        ids = list(traces.filter(batch__name=value).order_by("pk").values_list("pk", flat=True))
        if not ids:
            raise DiscoveryError(f"No trace of a batch {value!r} in this project.")
        return ids
    if kind == "outcome":
        if value not in OUTCOMES:
            raise DiscoveryError(f"The outcome is one of {', '.join(OUTCOMES)} (got {value[:20]!r}).")
        return list(traces.filter(outcome=value).order_by("pk").values_list("pk", flat=True))
    try:
        view = find_view(access, value)
    except Exception:  # Http404: the same words for a view that is missing or not this member's to pick
        raise DiscoveryError(f"No saved view {value!r} in this project.") from None
    return view_run_ids(project, view, None)


def split_sample(
    ids: Sequence[int], sample: int, gate_sample: int, *, seed: str
) -> tuple[list[int], list[int]]:
    """(the induction sample, the held-out gate sample): disjoint, drawn at random with a fixed seed. When
    the scope holds fewer than both, a third of it (at least one trace) is held out for the gate."""
    pool = sorted(ids)
    random.Random(seed).shuffle(pool)
    if len(pool) >= sample + gate_sample:
        return sorted(pool[:sample]), sorted(pool[sample : sample + gate_sample])
    held = max(1, len(pool) // 3) if len(pool) > 1 else 0
    held = min(held, gate_sample)
    induce = min(sample, len(pool) - held)
    return sorted(pool[:induce]), sorted(pool[induce : induce + held])


def check_raters(raters: Sequence[str] | str) -> list[str]:
    if isinstance(raters, str):
        raters = [r for r in raters.replace(" ", "").split(",") if r]
    out = list(dict.fromkeys(str(r).strip()[:200] for r in raters if str(r).strip()))
    if not MIN_RATERS <= len(out) <= MAX_RATERS:
        raise DiscoveryError(
            f"Give {MIN_RATERS} to {MAX_RATERS} different rater models (--raters m1,m2,m3), got {len(out)}."
        )
    return out


def rater_prompts(project: Project, raters: Sequence[str]) -> dict[str, int]:
    """Prompt variants: a rater written MODEL@vN asks MODEL with the project's LLM-rater prompt version N
    (e.g. qwen@v1,qwen@v2,llama); the others use the current version."""
    out = {}
    for rater in raters:
        model, _, version = rater.partition("@")
        if not version:
            continue
        if not model or not version.startswith("v") or not version[1:].isdigit() or len(version) > 9:
            raise DiscoveryError(
                f"Write a prompt variant as MODEL@vN (a prompt version number), not {rater!r}."
            )
        if not PromptTemplate.objects.filter(project=project, number=int(version[1:])).exists():
            raise DiscoveryError(f"No prompt version {version[1:]} in this project (rater {rater!r}).")
        out[rater] = int(version[1:])
    return out


def _thresholds(kappa_min: float, coverage_min: float) -> None:
    for name, value in (("kappa", kappa_min), ("coverage", coverage_min)):
        if not -1.0 <= value <= 1.0:
            raise DiscoveryError(f"The {name} threshold must be between -1 and 1.")


def check_size(value: int, what: str) -> int:
    if not 1 <= int(value) <= MAX_SAMPLE:
        raise DiscoveryError(f"The {what} must be from 1 to {MAX_SAMPLE:,} traces.")
    return int(value)


def candidates_from_changes(changes: Sequence[Any]) -> list[dict[str, str]]:
    """The `add` entries of a taxonomy-migration change list as candidates (other ops are refused: the gate
    measures new modes)."""
    out = []
    for n, change in enumerate(changes, 1):
        if not isinstance(change, dict) or change.get("op") != "add":
            raise DiscoveryError(f"change {n}: the gate takes only 'op: add' entries (new candidate modes).")
        code, name = str(change.get("code") or "").strip(), str(change.get("name") or "").strip()
        definition = str(change.get("definition") or "").strip()
        if not code or not name or not definition:
            raise DiscoveryError(f"change {n}: a candidate needs a code, a name and a definition.")
        out.append(
            {
                "code": code[:20],
                "name": name[:200],
                "definition": definition[:2_000],
                "guidance": str(change.get("guidance") or "").strip()[:2_000],
                "category": change.get("category"),
                "parent": change.get("parent"),
            }
        )
    return out


def candidates_from_proposals(project: Project) -> list[dict[str, str]]:
    """The groups of open proposals as candidates: a group's suggested name and its texts."""
    out = []
    for n, (group, items) in enumerate(proposal_groups(project_proposals(project)), 1):
        name = group.names[0] if group.names else " ".join(group.terms[:3]) or f"proposal group {n}"
        out.append(
            {
                "code": f"P-{n}",
                "name": name[:200],
                "definition": " / ".join(p.text for p in items[:3])[:2_000],
                "guidance": "",
                "proposals": [p.pk for p in items],
            }
        )
    return out


def _check_candidates(project: Project, candidates: Sequence[dict]) -> None:
    if not candidates:
        raise DiscoveryError("Give at least one candidate mode.")
    if len(candidates) > MAX_CANDIDATES:
        raise DiscoveryError(f"At most {MAX_CANDIDATES} candidates in one gate.")
    current = set(project.taxonomy_version.modes.values_list("code", flat=True))
    codes = [c["code"] for c in candidates]
    clash = sorted({c for c in codes if c in current or codes.count(c) > 1})
    if clash:
        raise DiscoveryError(f"Candidate code {', '.join(clash)} is already a mode or given twice.")


def do_start_discovery(
    access: ProjectAccess,
    *,
    scope: str,
    model: str | None = None,
    raters: Sequence[str] | str,
    sample: int = DEFAULT_SAMPLE,
    gate_sample: int = DEFAULT_GATE_SAMPLE,
    kappa_min: float = 0.75,
    coverage_min: float = 0.70,
    actor=None,
    enqueue: bool = True,
    background: bool = False,
) -> DiscoveryRun:
    """Start a discovery run: induction on `sample` traces of the scope, the gate on `gate_sample` others."""
    project = access.project
    config, model = _settings(project, model)
    raters = check_raters(raters)
    _thresholds(kappa_min, coverage_min)
    kind, value = parse_scope(scope)
    ids = scope_ids(access, kind, value)
    induce, held = split_sample(
        ids,
        check_size(sample, "sample"),
        check_size(gate_sample, "gate sample"),
        seed=f"{project.pk}:{scope}",
    )
    if len(induce) < 3 or not held:
        raise DiscoveryError(f"The scope {scope} holds {len(ids)} traces: discovery needs at least 4.")
    return _create(
        project,
        config,
        model,
        actor,
        enqueue,
        background,
        kind=DiscoveryRun.Kind.DISCOVER,
        phase=DiscoveryRun.Phase.ANALYSE,
        scope={"kind": kind, "value": value, "traces": len(ids)},
        induction_ids=induce,
        held_ids=held,
        raters=raters,
        kappa_min=kappa_min,
        coverage_min=coverage_min,
    )


def do_start_gate(
    access: ProjectAccess,
    *,
    candidates: Sequence[dict],
    scope: str,
    raters: Sequence[str] | str,
    sample: int = DEFAULT_GATE_SAMPLE,
    kappa_min: float = 0.75,
    coverage_min: float = 0.70,
    actor=None,
    enqueue: bool = True,
    background: bool = False,
) -> DiscoveryRun:
    """Start a gate of given candidates on a sample of the scope (all its traces when fewer)."""
    project = access.project
    raters = check_raters(raters)
    config, model = _settings(project, raters[0].partition("@")[0])
    _thresholds(kappa_min, coverage_min)
    _check_candidates(project, candidates)
    kind, value = parse_scope(scope)
    ids = scope_ids(access, kind, value)
    if not ids:
        raise DiscoveryError(f"The scope {scope} holds no trace.")
    pool = sorted(ids)
    random.Random(f"{project.pk}:{scope}:gate").shuffle(pool)
    return _create(
        project,
        config,
        model,
        actor,
        enqueue,
        background,
        kind=DiscoveryRun.Kind.GATE,
        phase=DiscoveryRun.Phase.GATE,
        scope={"kind": kind, "value": value, "traces": len(ids)},
        held_ids=sorted(pool[: check_size(sample, "sample")]),
        raters=raters,
        candidates=list(candidates),
        kappa_min=kappa_min,
        coverage_min=coverage_min,
    )


def _settings(project: Project, model: str | None):
    try:
        return check_run_settings(project, limit=None, model=model)
    except LLMRunError as error:
        raise DiscoveryError(str(error)) from None


def _create(project, config, model, actor, enqueue, background, **fields) -> DiscoveryRun:
    with transaction.atomic():
        run = DiscoveryRun.objects.create(
            project=project,
            model=model,
            endpoint={
                **endpoint_snapshot(config, model),
                "embeddings_model": config.embeddings_model,
                "rater_prompts": rater_prompts(project, fields.get("raters", [])),
            },
            instructions=current_prompt(project).instructions,
            token_cap=config.token_cap,
            created_by=actor,
            **fields,
        )
        if enqueue:
            _enqueue_on_commit(run.pk, background=background)
    log.info("project %s: %s run %d queued", project.slug, run.kind, run.pk)
    return run


def _enqueue_on_commit(run_id: int, *, background: bool = False) -> None:
    """As an LLM run: a worker's queue, or (the embedded default, `background`) a thread of this process."""
    enqueue_on_commit(DiscoveryRun, run_id, _run_in_thread, background=background)


def _run_in_thread(run_id: int) -> threading.Thread:
    from annotator.discovery.process import do_process_discovery, finish

    return run_in_thread(
        f"discovery-{run_id}",
        lambda: do_process_discovery(run_id),
        lambda error: finish(run_id, DiscoveryRun.Status.FAILED, error=error),
    )


def do_stop_discovery(run: DiscoveryRun, *, reason: str = "stopped by the owner") -> bool:
    """Ask an active run to stop; the worker sends nothing more and records what is on the wire."""
    return bool(
        DiscoveryRun.objects.filter(pk=run.pk, status__in=DiscoveryRun.ACTIVE_STATUSES).update(
            status=DiscoveryRun.Status.STOPPED, stop_reason=reason, finished_at=timezone.now()
        )
    )


def do_resume_discovery(run: DiscoveryRun, *, enqueue: bool = True, background: bool = False) -> bool:
    """Queue a stopped or failed run again: answers it has are kept, only the missing ones are asked."""
    if run.status in DiscoveryRun.ACTIVE_STATUSES or run.status == DiscoveryRun.Status.SUCCEEDED:
        return False
    with transaction.atomic():
        DiscoveryRun.objects.filter(pk=run.pk).update(
            status=DiscoveryRun.Status.QUEUED,
            stop_reason="",
            error="",
            finished_at=None,
            heartbeat_at=timezone.now(),
            token_cap=get_config(run.project).token_cap,
        )
        if enqueue:
            _enqueue_on_commit(run.pk, background=background)
    return True


def passing(run: DiscoveryRun) -> list[dict]:
    """The candidates that passed the gate, with their statistics."""
    stats = {c["code"]: c for c in (run.results or {}).get("candidates", [])}
    return [{**c, **stats[c["code"]]} for c in run.candidates if stats.get(c["code"], {}).get("passes")]


def do_send_to_proposals(run: DiscoveryRun, *, actor) -> list[ModeProposal]:
    """Each passing candidate becomes an open proposal marked discovered (with its run), on its first
    example's trace, so the proposals page, "Draft a mode from these" and the taxonomy migration take it
    like a person's. Sending twice adds nothing."""
    if run.status != DiscoveryRun.Status.SUCCEEDED:
        raise DiscoveryError("Only a finished run's candidates can be sent.")
    sent = set(ModeProposal.objects.filter(discovery_run=run).values_list("candidate__code", flat=True))
    created = []
    for c in passing(run):
        if c["code"] in sent:
            continue
        example = (c.get("examples") or [{}])[0]
        trace_id = example.get("trace") or next(iter(d["trace"] for d in c.get("disagreements", [])), None)
        trace_id = trace_id or (run.held_ids[0] if run.held_ids else None)
        if trace_id is None:
            continue
        steps = sorted({e["step"] for e in c.get("examples", []) if e.get("trace") == trace_id})
        created.append(
            ModeProposal.objects.create(
                project=run.project,
                trace_id=trace_id,
                author=actor,
                text=c["definition"][:2_000],
                suggested_name=c["name"][:200],
                steps=steps,
                cooccurring=[x["code"] for x in c.get("cooccurring", [])],
                discovery_run=run,
                candidate={
                    k: c.get(k)
                    for k in (
                        "code",
                        "name",
                        "definition",
                        "guidance",
                        "kappa",
                        "interval",
                        "prevalence",
                        "examples",
                    )
                },
            )
        )
    return created


def candidate_trace_ids(run: DiscoveryRun) -> list[int]:
    """The traces the candidates speak of: their examples and the held-out traces a rater marked them on."""
    ids = {e["trace"] for c in run.candidates for e in c.get("examples", [])}
    marked = DiscoveryAnswer.objects.filter(run=run, phase=DiscoveryAnswer.Phase.GATE, ok=True)
    codes = {c["code"] for c in run.candidates}
    for trace_id, answer in marked.values_list("trace_id", "answer"):
        if codes & {label["code"] for label in answer.get("labels", [])}:
            ids.add(trace_id)
    return sorted(ids)


def do_open_candidate_round(
    run: DiscoveryRun, *, name: str, annotators: Sequence[str], actor=None
) -> CalibrationRound:
    """A calibration round on the traces the candidates speak of (outside other rounds), so people label
    them before the codebook changes and their labels can be set beside the gate's. RoundError as
    annotator.services.rounds says."""
    taken = set(CalibrationRound.objects.filter(project=run.project).values_list("traces", flat=True))
    chosen = [pk for pk in candidate_trace_ids(run) if pk not in taken]
    if len(chosen) < 2:
        raise DiscoveryError("The candidates speak of fewer than 2 traces outside other rounds.")
    with transaction.atomic():
        round_ = do_open_round(
            run.project,
            name=name,
            annotators=list(annotators),
            choice=TraceChoice(ids=tuple(chosen)),
            actor=actor,
        )
        round_.selection = {"how": f"discovery run {run.pk} candidates", "run": run.pk, "n": len(chosen)}
        round_.save(update_fields=["selection"])
    return round_


def visible_runs(access: ProjectAccess):
    """The project's discovery and gate runs, for owners and adjudicators."""
    access.require(REVIEW_ROLES)
    return DiscoveryRun.objects.filter(project=access.project).order_by("-created_at")


def access_run(access: ProjectAccess, run_id: int, *, manage: bool = False) -> DiscoveryRun:
    """A run of the project (404 otherwise) for owners and adjudicators (owners only with `manage`); 403
    while the reader is blind on any trace the run read: its analyses, quotes and candidates come from them."""
    access.require(MANAGE_ROLES if manage else REVIEW_ROLES)
    run = DiscoveryRun.objects.filter(project=access.project, pk=run_id).first()
    if run is None:
        raise Http404("No such discovery run in this project")
    if blind_on_run(access, run):
        raise PermissionDenied(
            "You still have traces to annotate that this run read. Its analyses, quotes and candidates come "
            "from them, so it opens once you have submitted them (blind labelling)."
        )
    return run


def blind_on_run(access: ProjectAccess, run: DiscoveryRun) -> bool:
    return access.blind_assignments().filter(trace_id__in=list(run.seen_trace_ids)).exists()
