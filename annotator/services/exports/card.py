"""The dataset card (README.md): a YAML header the Hub and `datasets` read, and sections written from the data.

Pure: :class:`CardFacts` in, text out. Why every section is computed rather than templated prose: a card
is only trusted when its numbers are the dataset's own (counts from the rows written, agreement from the
stored report with its intervals, every mode's definition from the taxonomy version the labels used), and
when it says plainly what is missing (no agreement report, open adjudications, dropped text).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import yaml

from annotator.services.exports import markdown as md
from annotator.services.exports.dataset import CONFIG_ORDER, SPLIT, ConfigFiles
from annotator.services.exports.facts import Agreement, CardFacts
from traces.importers.hf_export import CONFIG_ANNOTATIONS, CONFIG_GOLD, CONFIG_TRACES, EXPORT_TAG

_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
_ROW_MEANING = {
    CONFIG_TRACES: "one agent trace, its steps nested",
    CONFIG_ANNOTATIONS: "one annotator's labels for one trace",
    CONFIG_GOLD: "the settled (agreed or adjudicated) labels of one trace",
}


def render_card(facts: CardFacts) -> str:
    header = yaml.safe_dump(card_metadata(facts), sort_keys=False, allow_unicode=True, width=1000)
    sections = [
        _intro(facts),
        _structure(facts),
        _traces(facts),
        _taxonomy(facts),
        _process(facts),
        _agreement(facts.agreement),
        _counts(facts),
        _citation(facts),
        _limitations(facts),
    ]
    return f"---\n{header}---\n\n" + "\n\n".join(s.strip() for s in sections if s.strip()) + "\n"


def card_metadata(facts: CardFacts) -> dict[str, Any]:
    """The YAML header: what the Hub indexes and what `datasets` uses to find each config's files."""
    written = [c for c in _ordered(facts.configs) if c.rows]
    return {
        "pretty_name": facts.options.pretty_name or f"{facts.project_name}: agent failure annotations",
        "license": facts.options.license,
        "task_categories": ["text-classification"],
        "task_ids": [
            "multi-label-classification"
            if facts.labelling_mode == "multi_label"
            else "multi-class-classification"
        ],
        "size_categories": [size_category(facts.tally.traces)],
        "tags": [
            EXPORT_TAG,
            "agent-traces",
            "failure-analysis",
            "llm-agents",
            f"taxonomy-{facts.taxonomy_slug}",
        ],
        "configs": [
            {
                "config_name": c.name,
                "data_files": [{"split": SPLIT, "path": c.pattern}],
                **({"default": True} if i == 0 else {}),
            }
            for i, c in enumerate(written)
        ],
    }


def size_category(n: int) -> str:
    for bound, name in _SIZES:
        if n < bound:
            return name
    return "1M<n<10M" if n < 10_000_000 else "n>1T"


def _intro(f: CardFacts) -> str:
    t = f.tally
    title = f.options.pretty_name or f"{f.project_name}: agent failure annotations"
    who = f"{len(t.annotators)} annotator{'s' if len(t.annotators) != 1 else ''}"
    return (
        f"# {title}\n\n"
        + (f"{f.description.strip()}\n\n" if f.description.strip() else "")
        + f"{t.traces:,} execution traces of LLM agents ({t.steps:,} steps), labelled with the failure taxonomy "
        f"**{f.taxonomy_name}** (version {f.taxonomy_version}) by {who}"
        + (f" and {len(t.llm_raters)} language-model rater(s)" if t.llm_raters else "")
        + f": {t.annotations:,} annotations and settled gold labels for {t.gold_traces:,} traces. "
        f"Exported from the project `{f.project_slug}` with trace-annotator."
    )


def _structure(f: CardFacts) -> str:
    repo = f.options.repo_id or "path/to/this/folder"
    rows = [
        [c.name, f"{c.rows:,}", _ROW_MEANING.get(c.name, ""), f"`{c.pattern}`"]
        for c in _ordered(f.configs)
        if c.rows
    ]
    absent = [c for c in CONFIG_ORDER if c not in {x.name for x in f.configs if x.rows}]
    lines = ["## Dataset structure", "", md.table(["config", "rows", "one row is", "files"], rows)]
    for name in absent:
        why = (
            "not exported (gold only)"
            if name == CONFIG_ANNOTATIONS and f.options.gold_only
            else "no rows (nothing settled yet)"
            if name == CONFIG_GOLD
            else "no rows"
        )
        lines.append(f"\nThe `{name}` config is absent: {why}.")
    lines += [
        "",
        "- `traces`: `trace_uid` (stable id of the trace's content), `id` (the source's id), `batch`, "
        "`benchmark`, `system`, `model`, `task`, `outcome` (success/failure/unknown), `score`, `metadata` "
        "(JSON text), `steps` (list of {index, parent, agent, role, kind, content, tool_name, tool_args "
        "(JSON text), tool_call_id, timestamp, tokens, duration_ms}).",
        "- `annotations`: `trace_uid`, `trace_id`, `annotator`, `annotator_kind` (human/llm), `labels` (mode "
        "codes), `primary_label`, `evidence_steps`, `no_failure`, `ambiguous`, `confidence` (1-5), `note`, "
        "`submitted_at`, `label_details` (per label: mode, primary, steps, quotes, note) and one 0/1 column "
        "per mode (empty where an imported annotation has no value for the mode: a missing vote, not a 0; "
        "see the taxonomy below for the column names).",
        "- `gold`: `trace_uid`, `trace_id`, `status` (agreed/resolved), `labels`, `primary_label`, "
        "`evidence_steps`, `disputed` (modes the annotators disagreed on), `adjudicator`, `resolved_at`, "
        "`note`, `label_details` (per label: source = agreed/accept_a/accept_b/adjudicator, reason, "
        "decided_by) and the same 0/1 columns.",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        *[
            f'{c.name} = load_dataset("{repo}", "{c.name}", split="{SPLIT}")'
            for c in _ordered(f.configs)
            if c.rows
        ],
        "```",
    ]
    return "\n".join(lines)


def _traces(f: CardFacts) -> str:
    t = f.tally
    parts = [
        "## The traces",
        "",
        f"{t.traces:,} traces from {len(t.batches)} batch(es); outcomes: "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(t.outcomes.items()))
        + ".",
        "",
        md.table(["batch", "traces"], md.most_common_rows(t.batches)),
        "",
        md.table(["benchmark", "traces"], md.most_common_rows(t.benchmarks)),
        "",
        md.table(["agent system", "traces"], md.most_common_rows(t.systems)),
    ]
    if not f.options.include_text:
        parts += [
            "",
            "Step text (`content`, `tool_args`) and quoted evidence were **dropped** from this export.",
        ]
    return "\n".join(parts)


def _taxonomy(f: CardFacts) -> str:
    mode = (
        "multi-label (any number of modes per trace)"
        if f.labelling_mode == "multi_label"
        else ("single primary label (one primary mode, optional secondary modes)")
    )
    lines = [
        f"## Failure taxonomy: {f.taxonomy_name} (v{f.taxonomy_version})",
        "",
        f"Labelling mode: {mode}." + (f" Source: {f.source_url}" if f.source_url else ""),
    ]
    if f.taxonomy_description.strip():
        lines += ["", f.taxonomy_description.strip()]
    lines += ["", "The taxonomy is also in `taxonomy.yaml` (re-importable with `import_taxonomy`)."]
    category = None
    for m in f.modes:
        if m.category != category:
            category = m.category
            lines += ["", f"### {m.category} {m.category_name}".rstrip() if m.category else "### Modes", ""]
        flags = (
            [f"column `{m.column}`"]
            + (["fatal"] if m.fatal else [])
            + ([f"subtype of {m.parent}"] if m.parent else [])
        )
        lines.append(f"- **{m.code} {m.name}** ({', '.join(flags)}): {md.oneline(m.definition)}")
    return "\n".join(lines)


def _process(f: CardFacts) -> str:
    t = f.tally
    histogram = t.overlap_histogram()
    adjudication = f.adjudication
    names = (
        "their real usernames"
        if f.options.real_names
        else "pseudonyms (`annotator-1`, `annotator-2`, ... by account order)"
    )
    return "\n".join(
        [
            "## How it was annotated",
            "",
            *_origin(f),
            f"- {md.counted(len(t.annotators), 'rater')} in this export, named here by {names}."
            + (
                f" {len(t.llm_raters)} language-model rater(s) also labelled (`annotator_kind` = llm)."
                if t.llm_raters
                else ""
            ),
            f"- Blind: {_blind(f)}.",
            f"- Written guidelines: {_guidelines(f)}. Only submitted annotations are published.",
            *_import_losses(f),
            "- Annotations per trace: "
            + ", ".join(f"{k}: {v:,} traces" for k, v in sorted(histogram.items()))
            + ".",
            f"- Adjudication: a trace whose annotators disagree on any mode goes to an adjudicator, who decides "
            f"each disputed mode; agreed modes carry over. Project-wide: {md.counted(adjudication.get('agreed', 0), 'trace')} "
            f"agreed automatically, {adjudication.get('resolved', 0):,} resolved by an adjudicator, "
            f"{adjudication.get('open', 0):,} still open. Gold labels published for {md.counted(t.gold_traces, 'trace')}.",
        ]
    )


def _origin(f: CardFacts) -> list[str]:
    """Which labels were made here (the project's settings apply) and which were imported (they do not)."""
    p = f.provenance
    lines = []
    if p.made_here:
        lines.append(
            f"- {md.counted(p.made_here, 'annotation')} by {md.counted(len(p.raters_here), 'person', 'people')} were made in "
            f"this project, which asks for **{f.overlap}** independent annotator(s) per trace."
        )
    if p.imported:
        lines.append(
            f"- {md.counted(p.imported, 'annotation')} by {md.counted(len(p.raters_imported), 'rater')} were imported with the "
            "data: how they were made (independently or not, blind or not, with which guidelines) is unknown."
        )
    if not p.made_here and not p.imported and not p.llm:
        lines.append("- No submitted annotation yet.")
    return lines


def _blind(f: CardFacts) -> str:
    """Only labels made here were made under the project's blind setting; an import cannot say."""
    p = f.provenance
    here = (
        (
            "yes, annotators never saw each other's labels"
            if f.blind
            else "no, annotators could see each other's labels"
        )
        if p.made_here
        else ""
    )
    if here and p.imported:
        return f"{here} (the {md.counted(p.made_here, 'annotation')} made here); unknown for the {p.imported:,} imported"
    if p.imported:
        return "unknown (every annotation was imported; how it was made is not recorded)"
    return here or "not applicable (no annotation)"


def _guidelines(f: CardFacts) -> str:
    p = f.provenance
    here = "yes" if f.has_guidelines else "none recorded"
    if p.imported and not p.made_here:
        return "unknown for the imported annotations"
    return f"{here} (for the annotations made here; unknown for the imported)" if p.imported else here


def _import_losses(f: CardFacts) -> list[str]:
    """What an import left out or found missing, from what it recorded (or "unknown")."""
    p = f.provenance
    if not p.imported:
        return []
    ignored = (
        "unknown (the import did not record them)" if p.ignored_labels is None else f"{p.ignored_labels:,}"
    )
    missing = "unknown" if p.missing_votes is None else f"{p.missing_votes:,}"
    return [
        f"- Imported labels left out because the taxonomy lacks their mode: {ignored}.",
        f"- Votes the source left empty (neither yes nor no in the file): {missing}.",
    ]


def _agreement(a: Agreement) -> str:
    if a.results is None:
        return f"## Inter-annotator agreement\n\nNo agreement report: {a.missing_reason}."
    results = a.results
    statistic = results.get("kappa_statistic", "cohen_kappa")
    label = "Cohen's κ" if statistic == "cohen_kappa" else "Fleiss' κ"
    rows = []
    for m in results.get("modes", []):
        ci = m.get("kappa_ci") or {}
        rows.append(
            [
                m.get("code", ""),
                m.get("name", ""),
                str(m.get("n_items", "")),
                md.estimate(m.get(statistic)),
                md.interval(ci),
                md.estimate(m.get("observed_agreement")),
                md.estimate(m.get("gwet_ac1")),
                md.estimate(m.get("pabak")),
                md.mean_prevalence(m.get("prevalence")),
            ]
        )
    overall = (results.get("overall") or {}).get("kappa") or {}
    counts = results.get("counts") or {}
    lines = [
        "## Inter-annotator agreement",
        "",
        f"From agreement report #{a.report_id} over {a.scope}, computed {a.computed_at or 'at export time'}: "
        f"{counts.get('items', 0):,} traces, {counts.get('items_with_two_or_more_raters', 0):,} with two or more "
        f"raters. Per mode, {label} with a {md.ci_level(results)} bootstrap interval; Gwet's AC1 and PABAK are "
        'given because κ is unstable for rare modes (the kappa paradox). "undefined" says why a statistic '
        "cannot be computed (for example, no variation).",
        "",
        md.table(["mode", "name", "traces", label, "95% CI", "observed", "AC1", "PABAK", "prevalence"], rows),
        "",
        f"Macro average {label} over modes where it is defined: {md.estimate(overall)}"
        + (f" ({overall.get('n_defined')} modes)." if overall.get("n_defined") is not None else "."),
    ]
    primary = results.get("primary")
    if isinstance(primary, dict) and primary.get("cohen_kappa"):
        lines += ["", f"Primary label (nominal): Cohen's κ {md.estimate(primary.get('cohen_kappa'))}."]
    return "\n".join(lines)


def _counts(f: CardFacts) -> str:
    t = f.tally
    mode_rows = [
        [
            m.code,
            m.name,
            f"{t.mode_annotations[m.code]:,}",
            f"{t.mode_traces[m.code]:,}",
            f"{t.gold_modes[m.code]:,}",
        ]
        for m in f.modes
    ]
    outcomes = sorted(t.outcomes)
    model_rows = []
    for model, n in t.models.most_common(20):
        gold = t.gold_by_model.get(model, Counter())
        top = ", ".join(f"{code} ({k})" for code, k in gold.most_common(3)) or "-"
        model_rows.append([model, f"{n:,}", top])
    return "\n".join(
        [
            "## Label counts",
            "",
            f"{t.annotations:,} annotations ({t.no_failure:,} saying no failure"
            + (f", {t.no_verdict:,} with neither a label nor a no-failure verdict" if t.no_verdict else "")
            + f"), gold labels for {t.gold_traces:,} traces.",
            "",
            md.table(
                ["mode", "name", "annotations choosing it", "traces (any annotator)", "gold"], mode_rows
            ),
            "",
            md.table(["model", "traces", "most frequent gold modes"], model_rows),
            "",
            md.table(["outcome", "traces"], [[o, f"{t.outcomes[o]:,}"] for o in outcomes]),
        ]
    )


def _citation(f: CardFacts) -> str:
    lines = ["## Citation", ""]
    if f.citation.strip():
        text = f.citation.strip()
        lines += [
            f"The failure taxonomy ({f.taxonomy_name}):",
            "",
            "```bibtex" if text.startswith("@") else "```",
            text,
            "```",
        ]
    else:
        lines.append(f"The taxonomy {f.taxonomy_name} records no citation.")
    return "\n".join(lines)


def _limitations(f: CardFacts) -> str:
    t = f.tally
    notes = []
    single = t.overlap_histogram().get(1, 0)
    unlabelled = t.overlap_histogram().get(0, 0)
    if single:
        notes.append(f"{single:,} traces have a single annotation: their labels carry no agreement check.")
    if unlabelled:
        notes.append(f"{unlabelled:,} exported traces have no submitted annotation yet.")
    if f.adjudication.get("open"):
        notes.append(
            f"{f.adjudication['open']:,} disagreements are still waiting for adjudication: those traces have no gold row."
        )
    if f.agreement.results is None:
        notes.append("No agreement statistics: treat the labels as unvalidated.")
    else:
        undefined = [
            m.get("code")
            for m in f.agreement.results.get("modes", [])
            if md.estimate_value(m.get(f.agreement.results.get("kappa_statistic", "cohen_kappa"))) is None
        ]
        if undefined:
            notes.append(
                f"κ is undefined for {', '.join(undefined)} (too rare or never varied): read AC1/PABAK for them."
            )
    # A single *known* value narrows the data; "(unknown)" for every trace says nothing of the kind.
    narrow = [
        f"{what} ({next(iter(counter))})"
        for what, counter in (("model", t.models), ("benchmark", t.benchmarks))
        if len(counter) == 1 and "(unknown)" not in counter
    ]
    if narrow:
        notes.append(
            f"The traces come from a single {' and a single '.join(narrow)}: failure rates may not transfer."
        )
    unknown = [
        what
        for what, counter in (("model", t.models), ("benchmark", t.benchmarks))
        if t.traces and counter.get("(unknown)") == t.traces
    ]
    if unknown:
        notes.append(f"The {' and the '.join(unknown)} of every trace is unknown.")
    if not f.options.include_text:
        notes.append(
            "Step text was dropped: the labels cannot be re-checked against the traces from this export alone."
        )
    notes.append("Labels reflect the taxonomy version above; a later version may define modes differently.")
    notes.append(
        "Annotators are "
        + (
            "named by their usernames."
            if f.options.real_names
            else "pseudonymised; the same person has the same pseudonym within this export only."
        )
    )
    return "## Known limitations\n\n" + "\n".join(f"- {n}" for n in notes)


def _ordered(configs: Iterable[ConfigFiles]) -> list[ConfigFiles]:
    order = {name: i for i, name in enumerate(CONFIG_ORDER)}
    return sorted(configs, key=lambda c: order.get(c.name, 99))
