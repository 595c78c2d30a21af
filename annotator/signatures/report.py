"""All figures at once: the one entry point the ORM bridge, the API and the benchmark call."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.signatures.contrast import compare_batches, outcome_contrast
from annotator.signatures.inputs import ModeInfo, SignatureInput
from annotator.signatures.position import evidence_positions
from annotator.signatures.prevalence import categories_of, modes_per_trace, prevalence
from annotator.signatures.results import (
    BatchComparison,
    CategoryInfo,
    Cooccurrence,
    EvidencePositions,
    FailureVectors,
    ModesPerTrace,
    OutcomeContrast,
    Prevalence,
)
from annotator.signatures.structure import cooccurrence, failure_vectors
from annotator.signatures.tallies import Tallies, figures_from, tally

__all__ = ["DIMENSIONS", "Signatures", "compute_signatures", "direct_signatures", "signatures_from"]

DIMENSIONS = ("model", "system", "benchmark")


@dataclass(frozen=True, slots=True)
class Signatures:
    """Every figure for one selection of labelled traces.

    ``prevalence`` holds the overall rates first (dimension ``"all"``), then one table per dimension in
    :data:`DIMENSIONS` that the input carries. ``comparison`` is None unless two batches were named.
    """

    modes: tuple[ModeInfo, ...]
    categories: tuple[CategoryInfo, ...]
    n_traces: int
    n_failed: int
    n_successful: int
    n_unknown: int
    prevalence: tuple[Prevalence, ...]
    modes_per_trace: ModesPerTrace
    contrast: OutcomeContrast
    cooccurrence: Cooccurrence
    vectors: FailureVectors
    positions: EvidencePositions
    comparison: BatchComparison | None

    def prevalence_by(self, dimension: str) -> Prevalence | None:
        return next((table for table in self.prevalence if table.dimension == dimension), None)


def compute_signatures(data: SignatureInput, *, compare: tuple[str, str] | None = None) -> Signatures:
    """Figures 1-6 for the selected rows of `data`; the batch comparison (when `compare` names two
    batches) reads every row, because a filter on batches must not hide the batches being compared.

    Computed from counts (:mod:`annotator.signatures.tallies`), which a refresh updates for the changed
    traces alone; ``test_pure`` checks them against the figure functions applied to `data` directly."""
    return signatures_from(tally(data), compare=compare)


def signatures_from(counts: Tallies, *, compare: tuple[str, str] | None = None) -> Signatures:
    """The figures of the traces `counts` counted."""
    return Signatures(**figures_from(counts, compare))


def direct_signatures(data: SignatureInput, *, compare: tuple[str, str] | None = None) -> Signatures:
    """The same figures with each figure function reading `data` itself: the reference the counts are
    checked against."""
    selected = data.selected()
    categories, _ = categories_of(selected)
    contrast = outcome_contrast(selected)
    tables = [prevalence(selected)]
    tables += [prevalence(selected, dimension) for dimension in DIMENSIONS if dimension in selected.groups]
    return Signatures(
        modes=selected.modes,
        categories=categories,
        n_traces=selected.n_traces,
        n_failed=contrast.n_failed,
        n_successful=contrast.n_successful,
        n_unknown=contrast.n_unknown,
        prevalence=tuple(tables),
        modes_per_trace=modes_per_trace(selected, "model" if "model" in selected.groups else None),
        contrast=contrast,
        cooccurrence=cooccurrence(selected),
        vectors=failure_vectors(selected),
        positions=evidence_positions(selected),
        comparison=compare_batches(data, *compare) if compare else None,
    )
