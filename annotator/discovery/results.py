"""A run's results as the page, the API and `--json` show them: candidates with their gate numbers and
examples, what consolidation dropped, the codebook's coverage, and the methods paragraph."""

from __future__ import annotations

from typing import Any

from annotator.llm.windows import CUT
from annotator.models import DiscoveryAnswer, DiscoveryRun
from annotator.services.llm.labeller import long_trace_options


def methods_paragraph(run: DiscoveryRun) -> str:
    """How the candidates were found and gated, in words for a paper's methods section."""
    raters = ", ".join(run.raters)
    gate = (
        f"Each candidate was then gated: {len(run.raters)} independent model raters ({raters}) applied the "
        f"project's current modes plus the candidates to {len(run.held_ids)} held-out traces of the scope, with "
        "the project's LLM-rater prompt and answer format. Per candidate we report Fleiss' kappa across raters "
        "with a 95% percentile bootstrap interval (1,000 resamples of traces), the prevalence of the candidate "
        "among the raters' answers, and the traces on which raters disagreed; a candidate passes at "
        f"kappa >= {run.kappa_min:.2f}. The codebook's coverage is the share of the held-out failed traces that "
        f"a majority of raters gave at least one code; it passes at coverage >= {run.coverage_min:.2f}."
    )
    if run.kind == DiscoveryRun.Kind.GATE:
        return f"{len(run.candidates)} candidate modes were given by the project owner. " + gate
    return (
        f"Candidate failure modes were induced from a random sample of {len(run.induction_ids)} traces of "
        f"{_scope(run)} with the model {run.model}. For each trace the model described what went wrong, the "
        "steps where it shows, verbatim quotes from those steps, and which of the current modes cover it. "
        + _long_traces(run)
        + f"Analyses no current mode covers were represented by {_vectors(run)} and grouped by "
        "average-linkage clustering on cosine distance; groups of at least three traces were named and "
        "defined by the model, with examples citing trace, step and quote. Consolidation was done by code: "
        "a candidate any of whose example quotes was not found verbatim in the cited step was dropped, a "
        "candidate whose definition was most similar to a current mode's (TF-IDF cosine >= 0.3) was dropped "
        "as a restatement of that mode, and near-duplicate candidates (cosine >= 0.5) were merged. "
        + gate.replace("held-out traces", "held-out traces that induction did not see", 1)
    )


def _long_traces(run: DiscoveryRun) -> str:
    """How the analyses read traces over the character budget, and how many there were (counted by the
    worker once the analyses are in, kept in the run's results: a page never counts answers a running
    worker is writing)."""
    options = long_trace_options(run.endpoint)
    budget = f"{options['budget']:,} characters"
    counts = (run.results or {}).get("long_traces") or {}
    if options["long_traces"] == CUT:
        cut = counts.get("cut")
        if cut == 0:
            return f"Every trace fit the budget of {budget} in one request. "
        which = (
            f"Traces over the budget of {budget} have"
            if cut is None
            else f"{cut} of the traces analysed exceeded the budget of {budget} and had"
        )
        return (
            f"{which} their middle cut out: the model saw the steps from the start and from the end that fit "
            "half the budget each, with a marker naming the steps left out, and could neither describe nor "
            "quote those. "
        )
    windowed = counts.get("windowed")
    if windowed == 0:
        return f"Every trace fit the budget of {budget} in one request. "
    which = (
        f"Traces over the budget of {budget} are"
        if windowed is None
        else f"{windowed} of the traces analysed exceeded the budget of {budget} and were"
    )
    return (
        f"{which} read in overlapping windows of consecutive steps ({options['overlap']} steps shared), one "
        "request each, every step seen once at least; each window's answer could cite only its own steps, "
        "numbered as in the trace, and the windows' failures were joined. "
    )


def long_trace_counts(run: DiscoveryRun) -> dict[str, int]:
    """How many of the run's analyses were read in windows and how many had their middle cut."""
    analyses = run.answers.filter(phase=DiscoveryAnswer.Phase.ANALYSE)
    return {
        "windowed": analyses.filter(answer__windows__gt=1).count(),
        "cut": analyses.filter(answer__cut=True).count(),
    }


def _vectors(run: DiscoveryRun) -> str:
    grouped_by = (run.results or {}).get("grouped_by") or ""
    if grouped_by.startswith("embeddings"):
        return f"the endpoint's {grouped_by}"
    return "TF-IDF vectors (scikit-learn)"


def _scope(run: DiscoveryRun) -> str:
    scope = run.scope or {}
    return f"the {scope.get('kind', '?')} {scope.get('value', '?')!r} ({scope.get('traces', 0)} traces)"


def results_view(run: DiscoveryRun) -> dict[str, Any]:
    """The run as JSON-ready data (the API body, `discover_modes --json`, `gate_modes --json`, the page)."""
    stats = {c["code"]: c for c in (run.results or {}).get("candidates", [])}
    candidates = []
    for c in run.candidates:
        s = stats.get(c["code"], {})
        candidates.append(
            {
                "code": c["code"],
                "name": c.get("name", ""),
                "definition": c.get("definition", ""),
                "guidance": c.get("guidance", ""),
                "support": c.get("support"),
                "examples": c.get("examples", []),
                "kappa": s.get("kappa"),
                "kappa_undefined": s.get("kappa_undefined"),
                "interval": s.get("interval"),
                "prevalence": s.get("prevalence"),
                "present_in": s.get("present_in"),
                "cooccurring": s.get("cooccurring", []),
                "disagreement_count": s.get("disagreement_count", 0),
                "disagreements": s.get("disagreements", []),
                "passes": s.get("passes"),
            }
        )
    results = run.results or {}
    return {
        "id": run.pk,
        "kind": run.kind,
        "status": run.status,
        "phase": run.phase,
        "stop_reason": run.stop_reason,
        "error": run.error,
        "scope": {k: (run.scope or {}).get(k) for k in ("kind", "value", "traces")},
        "model": run.model,
        "raters": list(run.raters),
        "induction_traces": len(run.induction_ids),
        "gate_traces": len(run.held_ids),
        "progress": {
            "step": run.phase,
            "step_label": run.get_phase_display(),
            "unit": run.progress_unit,
            "total": run.total,
            "done": run.done,
            "failed": run.failed,
            "percent": run.percent,
        },
        "tokens_used": run.tokens_used,
        "kappa_min": run.kappa_min,
        "coverage_min": run.coverage_min,
        "grouped_by": results.get("grouped_by") or "",
        "coverage": results.get("coverage"),
        "codebook_passes": results.get("codebook_passes"),
        "candidates": candidates,
        "dropped": list(run.dropped or []),
        "methods": methods_paragraph(run),
    }
