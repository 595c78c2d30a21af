"""The whole path -- labels file -> import_annotations -> database -> `agreement SLUG --json` -- gives the
numbers of the reference libraries on held-out random labels (fixed seeds), to 1e-9."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest
from django.core.management import call_command
from nltk.metrics.distance import masi_distance as nltk_masi
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotator.agreement.report import NO_PRIMARY
from annotator.models import Rater, RaterKind
from tests.agreement._reference import irrcac, krippendorff_nominal, sklearn_cohen, statsmodels_fleiss
from tests.factories import ProjectFactory, add_member, trace_with_steps

TOL = 1e-9
STEPS = 12


def safe_masi(a, b):
    # nltk divides by zero on two empty sets ("no failure" twice); they are identical: distance 0.
    return 0.0 if not a and not b else nltk_masi(a, b)


def make_project(version, owner, n_traces: int, slug: str):
    project = ProjectFactory(taxonomy_version=version, slug=slug)
    add_member(project, owner, "owner")
    traces = [trace_with_steps(STEPS, external_id=f"{slug}-{i}") for i in range(n_traces)]
    for batch in {t.batch for t in traces}:
        project.batches.add(batch)
    return project, traces


def random_ratings(seed: int, n_items: int, n_raters: int, n_modes: int, missing: float) -> np.ndarray:
    """Correlated 0/1 labels (shared truth, per-rater noise), whole annotations missing at random."""
    rng = np.random.default_rng(seed)
    prevalence = np.linspace(0.05, 0.4, n_modes)
    truth = rng.random((n_items, 1, n_modes)) < prevalence
    ratings = (truth ^ (rng.random((n_items, n_raters, n_modes)) < 0.15)).astype(np.int8)
    gone = rng.random((n_items, n_raters)) < missing
    gone[gone.all(axis=1), 0] = False  # every trace keeps at least one annotation
    ratings[gone] = -1
    return ratings


def write_jsonl(path, traces, ratings, codes, raters, seed: int, primary=None) -> None:
    rng = np.random.default_rng(seed + 1000)
    with path.open("w") as out:
        for i, trace in enumerate(traces):
            for j, rater in enumerate(raters):
                if ratings[i, j, 0] < 0:
                    continue
                labels = [
                    {
                        "mode": codes[k],
                        "steps": sorted({int(s) for s in rng.integers(0, STEPS, size=rng.integers(0, 3))}),
                        "primary": bool(primary is not None and primary[i, j] == k),
                    }
                    for k in np.flatnonzero(ratings[i, j] == 1)
                ]
                line = {
                    "trace": trace.external_id,
                    "annotator": rater,
                    "labels": labels,
                    "no_failure": not labels,
                }
                out.write(json.dumps(line) + "\n")


def run_report(slug: str, *args: str) -> dict:
    buffer = io.StringIO()
    call_command("agreement", slug, "--json", *args, stdout=buffer)
    return json.loads(buffer.getvalue())


def import_and_report(tmp_path, project, traces, ratings, codes, raters, seed, primary=None) -> dict:
    path = tmp_path / f"{project.slug}.jsonl"
    write_jsonl(path, traces, ratings, codes, raters, seed, primary)
    call_command("import_annotations", str(path), project=project.slug, stdout=io.StringIO())
    return run_report(project.slug)


def nltk_masi_alpha(ratings: np.ndarray) -> float:
    from nltk.metrics.agreement import AnnotationTask

    triples = [
        (f"r{j}", f"i{i:05d}", frozenset(np.flatnonzero(ratings[i, j] == 1).tolist()))
        for i in range(ratings.shape[0])
        for j in range(ratings.shape[1])
        if ratings[i, j, 0] >= 0
    ]
    return AnnotationTask(data=triples, distance=safe_masi).alpha()


def value(estimate: dict) -> float:
    assert estimate["value"] is not None, estimate
    return estimate["value"]


def test_two_annotators_with_missing_labels_match_the_references(tmp_path, mast, owner):
    codes = list(mast.modes.order_by("order").values_list("code", flat=True))
    project, traces = make_project(mast, owner, 90, "ref-two")
    ratings = random_ratings(21, len(traces), 2, len(codes), missing=0.15)
    report = import_and_report(tmp_path, project, traces, ratings, codes, ["alice", "bob"], 21)

    assert report["schema"] == 1
    # Imported raters are namespaced by their file (ref-two.jsonl).
    assert [r["username"] for r in report["raters"]] == ["ref-two/alice", "ref-two/bob"]
    assert report["counts"]["annotations"] == int((ratings[:, :, 0] >= 0).sum())
    assert report["kappa_statistic"] == "cohen_kappa"
    for k, row in enumerate(report["modes"]):
        assert row["code"] == codes[k]
        column = ratings[:, :, k]
        assert value(row["cohen_kappa"]) == pytest.approx(sklearn_cohen(column[:, 0], column[:, 1]), abs=TOL)
        assert value(row["krippendorff_alpha"]) == pytest.approx(krippendorff_nominal(column), abs=TOL)
        assert value(row["gwet_ac1"]) == pytest.approx(irrcac(column, "gwet")["coefficient_value"], abs=TOL)
        assert value(row["fleiss_kappa"]) == pytest.approx(
            irrcac(column, "fleiss")["coefficient_value"], abs=TOL
        )
        low, high = row["kappa_ci"]["low"], row["kappa_ci"]["high"]
        assert low <= value(row["cohen_kappa"]) <= high and row["kappa_ci"]["n_resamples"] == 1000
    assert value(report["masi_alpha"]["alpha"]) == pytest.approx(nltk_masi_alpha(ratings), abs=TOL)
    (pair,) = report["pairs"]
    assert (pair["a"], pair["b"]) == ("ref-two/alice", "ref-two/bob")
    assert [value(m["cohen_kappa"]) for m in pair["modes"]] == [
        value(m["cohen_kappa"]) for m in report["modes"]
    ]


def test_three_complete_annotators_match_statsmodels_and_pairwise_sklearn(tmp_path, mast, owner):
    codes = list(mast.modes.order_by("order").values_list("code", flat=True))
    project, traces = make_project(mast, owner, 70, "ref-three")
    raters = ["carl", "dana", "llm:qwen2.5-7b"]
    ratings = random_ratings(22, len(traces), 3, len(codes), missing=0.0)
    path = tmp_path / "three.jsonl"
    write_jsonl(path, traces, ratings, codes, raters, 22)
    call_command("import_annotations", str(path), project=project.slug, stdout=io.StringIO())
    # Imported labels are by imported raters; here one of them stands in for an LLM rater (the kind column).
    Rater.objects.filter(user__username="three/llm-qwen2.5-7b").update(kind=RaterKind.LLM)
    report = run_report(project.slug)

    assert report["kappa_statistic"] == "fleiss_kappa"
    assert [r["kind"] for r in report["raters"]] == ["human", "human", "llm"]
    for k, row in enumerate(report["modes"]):
        column = ratings[:, :, k]
        assert value(row["fleiss_kappa"]) == pytest.approx(statsmodels_fleiss(column), abs=TOL)
        assert value(row["krippendorff_alpha"]) == pytest.approx(krippendorff_nominal(column), abs=TOL)
        assert value(row["gwet_ac1"]) == pytest.approx(irrcac(column, "gwet")["coefficient_value"], abs=TOL)
        assert row["cohen_kappa"]["undefined_code"] == "not_two_raters"
    assert value(report["masi_alpha"]["alpha"]) == pytest.approx(nltk_masi_alpha(ratings), abs=TOL)
    names = [f"three/{name.replace(':', '-')}" for name in raters]
    assert [(p["a"], p["b"]) for p in report["pairs"]] == [
        (names[0], names[1]),
        (names[0], names[2]),
        (names[1], names[2]),
    ]
    for pair, (a, b) in zip(report["pairs"], [(0, 1), (0, 2), (1, 2)], strict=True):
        assert pair["n_boot"] == 200
        for k, mode in enumerate(pair["modes"]):
            expected = cohen_kappa_score(ratings[:, a, k], ratings[:, b, k])
            assert value(mode["cohen_kappa"]) == pytest.approx(expected, abs=TOL)
            assert mode["kappa_ci"]["low"] <= value(mode["cohen_kappa"]) <= mode["kappa_ci"]["high"]


def test_filters_restrict_the_raters(tmp_path, mast, owner):
    codes = list(mast.modes.order_by("order").values_list("code", flat=True))
    project, traces = make_project(mast, owner, 40, "ref-filter")
    ratings = random_ratings(23, len(traces), 3, len(codes), missing=0.0)
    import_and_report(tmp_path, project, traces, ratings, codes, ["eve", "fay", "gus"], 23)
    report = run_report(project.slug, "--annotators", "ref-filter/eve,ref-filter/gus")
    assert report["filters"] == {"annotators": ["ref-filter/eve", "ref-filter/gus"]}
    assert [r["username"] for r in report["raters"]] == ["ref-filter/eve", "ref-filter/gus"]
    for k, row in enumerate(report["modes"]):
        expected = sklearn_cohen(ratings[:, 0, k], ratings[:, 2, k])
        assert value(row["cohen_kappa"]) == pytest.approx(expected, abs=TOL)


def test_single_primary_nominal_agreement_and_confusion_matrix(tmp_path, taxonomies, owner):
    version = taxonomies["agent-failures-6"]
    codes = list(version.modes.order_by("order").values_list("code", flat=True))
    project, traces = make_project(version, owner, 80, "ref-primary")
    ratings = random_ratings(24, len(traces), 2, len(codes), missing=0.1)
    rng = np.random.default_rng(5)
    primary = np.full(ratings.shape[:2], len(codes), dtype=np.int64)  # "none": no failure
    for i, j in zip(*np.nonzero((ratings == 1).any(axis=2)), strict=True):
        primary[i, j] = rng.choice(np.flatnonzero(ratings[i, j] == 1))
    primary[ratings[:, :, 0] < 0] = -1
    report = import_and_report(tmp_path, project, traces, ratings, codes, ["hal", "ivy"], 24, primary)

    section = report["primary"]
    assert section["categories"] == [*codes, NO_PRIMARY]
    both = (primary[:, 0] >= 0) & (primary[:, 1] >= 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(primary[both, 0], primary[both, 1])
    assert value(section["cohen_kappa"]) == pytest.approx(expected, abs=TOL)
    assert value(section["krippendorff_alpha"]) == pytest.approx(krippendorff_nominal(primary), abs=TOL)
    labels = list(range(len(codes) + 1))
    assert (
        section["confusion"]["matrix"]
        == confusion_matrix(primary[both, 0], primary[both, 1], labels=labels).tolist()
    )
    assert (section["confusion"]["rows"], section["confusion"]["columns"]) == (
        "ref-primary/hal",
        "ref-primary/ivy",
    )
    # Subtypes: fine modes in the main table, and rolled up to their parents in the coarse table.
    parent_of = dict(version.modes.filter(parent__isnull=False).values_list("code", "parent__code"))
    assert [row["code"] for row in report["coarse_modes"]] == [c for c in codes if c not in parent_of]
    af1 = [k for k, c in enumerate(codes) if c == "AF-1" or parent_of.get(c) == "AF-1"]
    rolled = np.where(ratings[:, :, 0:1] < 0, -1, (ratings[:, :, af1] == 1).any(axis=2, keepdims=True))[
        :, :, 0
    ]
    row = next(r for r in report["coarse_modes"] if r["code"] == "AF-1")
    assert value(row["cohen_kappa"]) == pytest.approx(sklearn_cohen(rolled[:, 0], rolled[:, 1]), abs=TOL)


def test_the_readable_table_and_unknown_filters(tmp_path, mast, owner):
    codes = list(mast.modes.order_by("order").values_list("code", flat=True))
    project, traces = make_project(mast, owner, 20, "ref-text")
    ratings = random_ratings(25, len(traces), 2, len(codes), missing=0.0)
    import_and_report(tmp_path, project, traces, ratings, codes, ["kim", "lou"], 25)
    buffer = io.StringIO()
    call_command("agreement", project.slug, stdout=buffer)
    text = buffer.getvalue()
    assert "cohen_kappa" in text and "FM-1.1" in text and "MASI alpha" in text
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No annotator “zed”"):
        call_command("agreement", project.slug, "--annotators", "zed", stdout=io.StringIO())
    with pytest.raises(CommandError, match="not a date"):
        call_command("agreement", project.slug, "--since", "yesterday", stdout=io.StringIO())
