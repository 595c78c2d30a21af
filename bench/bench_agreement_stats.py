"""Benchmark: vectorised agreement statistics vs. the obvious per-mode library loop.

Run: ``python bench/bench_agreement_stats.py [--traces N]`` (defaults: 100000
traces x 14 modes x 2 raters, 1000 bootstrap resamples per mode).

Baseline (measured in the same run on the same data): for every mode,
scikit-learn ``cohen_kappa_score`` on the data and on each bootstrap resample,
plus ``krippendorff.alpha`` on the data. Running it for all 1000 resamples
would take minutes, so it runs ``--baseline-resamples`` resamples (default
20) and the per-resample time is extrapolated linearly to ``--boot``; the
table says so. (Our side also bootstraps alpha, which the baseline does not:
the comparison favours the baseline.) MASI alpha is timed separately, against
nltk on a sub-sample because nltk is far slower.

Not collected by pytest: ``bench/`` is outside ``testpaths``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotator.agreement.setstats import masi_alpha
from annotator.agreement.stats import binary_mode_agreement


def make_ratings(n_traces: int, n_raters: int, n_modes: int, seed: int) -> np.ndarray:
    """Realistic-ish labels: mode prevalence 1%..30%, 10% rater noise relative to prevalence, 2% missing."""
    rng = np.random.default_rng(seed)
    prevalence = np.geomspace(0.01, 0.3, n_modes)
    truth = rng.random((n_traces, 1, n_modes)) < prevalence
    flip = rng.random((n_traces, n_raters, n_modes)) < 0.1 * prevalence + 0.005
    ratings = (truth ^ flip).astype(np.int8)
    ratings[rng.random((n_traces, n_raters)) < 0.02] = -1
    return ratings


def to_label_sets(ratings: np.ndarray) -> list[list[frozenset[int] | None]]:
    """Per trace and rater, the set of chosen modes (``None`` if the rater skipped the trace)."""
    out = []
    for trace in ratings:
        row = []
        for rater in trace:
            row.append(None if (rater < 0).all() else frozenset(np.flatnonzero(rater == 1).tolist()))
        out.append(row)
    return out


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def baseline(ratings: np.ndarray, n_boot: int, n_sample: int, seed: int) -> tuple[float, float, float, float]:
    """(cohen point, cohen per-resample extrapolated to n_boot, krippendorff, measured seconds)."""
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    n_traces, _, n_modes = ratings.shape
    both = (ratings[:, 0] >= 0) & (ratings[:, 1] >= 0)
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        def points():
            for j in range(n_modes):
                cohen_kappa_score(ratings[both[:, j], 0, j], ratings[both[:, j], 1, j])

        t_point, _ = timed(points)

        def resamples():
            for _ in range(n_sample):
                idx = rng.integers(0, n_traces, size=n_traces)
                sample = ratings[idx]
                ok = both[idx]
                for j in range(n_modes):
                    cohen_kappa_score(sample[ok[:, j], 0, j], sample[ok[:, j], 1, j])

        t_sample, _ = timed(resamples)
        reliability = np.where(ratings < 0, np.nan, ratings).astype(np.float64)
        t_alpha, _ = timed(
            lambda: [
                krippendorff.alpha(reliability_data=reliability[:, :, j].T, level_of_measurement="nominal")
                for j in range(n_modes)
            ]
        )
    return t_point, t_sample / n_sample * n_boot, t_alpha, t_point + t_sample + t_alpha


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--modes", type=int, default=14)
    parser.add_argument("--raters", type=int, default=2)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--baseline-resamples", type=int, default=20)
    parser.add_argument("--masi-nltk-traces", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.raters != 2:
        parser.error("the Cohen baseline needs exactly 2 raters")

    ratings = make_ratings(args.traces, args.raters, args.modes, args.seed)
    print(
        f"data: {args.traces} traces x {args.raters} raters x {args.modes} modes; "
        f"{args.boot} bootstrap resamples per mode; numpy {np.__version__}"
    )

    # Ours is fast enough to take the best of 3 runs (less timer noise); the baseline runs once.
    t_ours_point = min(timed(lambda: binary_mode_agreement(ratings, n_boot=0))[0] for _ in range(3))
    runs = [timed(lambda: binary_mode_agreement(ratings, n_boot=args.boot, seed=args.seed)) for _ in range(3)]
    t_ours, rows = min(runs, key=lambda run: run[0])
    b_point, b_boot, b_alpha, b_measured = baseline(ratings, args.boot, args.baseline_resamples, args.seed)
    b_total = b_point + b_boot + b_alpha

    t_sets, label_sets = timed(lambda: to_label_sets(ratings))
    t_masi, masi = timed(lambda: masi_alpha(label_sets))
    sub = label_sets[: args.masi_nltk_traces]
    t_masi_sub, masi_sub = timed(lambda: masi_alpha(sub))
    t_nltk, nltk_value = timed(lambda: _nltk_masi_alpha(sub))

    width = 98
    print("-" * width)
    print(f"{'what':<72} | {'seconds':>9} | {'ratio':>9}")
    print("-" * width)

    def line(what: str, seconds: float, reference: float | None) -> None:
        ratio = f"{reference / seconds:8.1f}x" if reference else f"{'-':>9}"
        print(f"{what:<72} | {seconds:9.3f} | {ratio}")

    line(f"baseline: sklearn cohen_kappa_score x {args.modes} modes (point)", b_point, None)
    line(
        f"baseline: sklearn x {args.modes} modes x {args.boot} resamples "
        f"(EXTRAPOLATED from {args.baseline_resamples})",
        b_boot,
        None,
    )
    line(f"baseline: krippendorff.alpha x {args.modes} modes (point only)", b_alpha, None)
    line("baseline total", b_total, b_total)
    line(f"ours: binary_mode_agreement, n_boot={args.boot} (vs baseline total)", t_ours, b_total)
    line("ours: binary_mode_agreement, n_boot=0 (vs baseline point rows)", t_ours_point, b_point + b_alpha)
    print("-" * width)
    line(f"MASI: build label sets from the tensor ({args.traces} traces, Python)", t_sets, None)
    line(f"MASI: ours masi_alpha on {args.traces} traces", t_masi, None)
    line(f"MASI: nltk AnnotationTask(masi).alpha() on {len(sub)} traces", t_nltk, t_nltk)
    line(f"MASI: ours masi_alpha on the same {len(sub)} traces (vs nltk)", t_masi_sub, t_nltk)
    print("-" * width)
    print(f"baseline wall time actually measured: {b_measured:.2f} s")
    print("ratio column = reference seconds / row seconds (bigger is faster); ours = best of 3 runs")
    print("ours (n_boot>0) also bootstraps Krippendorff's alpha per mode, which the baseline does not")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    row = rows[-1]
    print(
        f"sanity (mode {row.mode}): cohen={row.cohen_kappa.value:.4f} "
        f"CI=[{row.kappa_ci.low:.4f}, {row.kappa_ci.high:.4f}] alpha={row.krippendorff_alpha.value:.4f}; "
        f"MASI alpha={masi.alpha.value:.4f}; sub-sample ours={masi_sub.alpha.value:.6f} nltk={nltk_value:.6f}"
    )


def _nltk_masi_alpha(label_sets: list[list[frozenset[int] | None]]) -> float:
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import masi_distance

    from annotator.agreement.setstats import masi_distance as safe_masi

    has_empty = any(value == frozenset() for row in label_sets for value in row)
    triples = [
        (j, i, value) for i, row in enumerate(label_sets) for j, value in enumerate(row) if value is not None
    ]
    # nltk's own masi_distance divides by zero on two empty sets; fall back to ours only then.
    return AnnotationTask(data=triples, distance=safe_masi if has_empty else masi_distance).alpha()


if __name__ == "__main__":
    main()
