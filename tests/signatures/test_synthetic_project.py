"""On a project whose true signatures are known by construction (tests/signatures/world.py), every figure
equals the number worked out by hand below. Counts and rates are read off the block table; the Wilson and
Newcombe bounds are the textbook formulas' values (statsmodels gives the same digits)."""

from __future__ import annotations

import pytest

from annotator.services.signatures import SignatureQuery, project_signatures
from tests.signatures.world import R, T, V

pytestmark = pytest.mark.django_db

WILSON = {  # (count, total): (low, high), Wilson 95% score interval
    (18, 80): (0.14733207340846632, 0.32786789783607356),
    (8, 80): (0.05154761556738083, 0.1851068880610409),
    (24, 80): (0.21064571260081338, 0.4076815392133974),
    (12, 40): (0.1807484522974653, 0.45430018818144946),
    (4, 40): (0.03957952868260635, 0.23051775227522303),
    (16, 40): (0.2634832568429192, 0.5540410633965382),
    (6, 40): (0.07061187717320357, 0.2907232436648971),
    (8, 40): (0.10499989725437704, 0.3475730634639951),
    (10, 40): (0.14187118639096305, 0.4019396142076803),
    (20, 40): (0.35199526933465375, 0.6480047306653463),
    (0, 40): (0.0, 0.08762160119728668),
    (10, 10): (0.7224672001371106, 1.0),
    (6, 10): (0.31267376973365824, 0.8318196702937638),
    (8, 70): (0.05906128946637644, 0.20964221582154374),
    (18, 70): (0.16929275741343847, 0.3702613014715483),
    (14, 70): (0.12304739248362952, 0.30816644496253065),
}


def rates(group, kind="modes"):
    return {p.key: (p.count, p.total) for p in getattr(group, kind) if p.count}


def check_interval(p):
    low, high = WILSON[(p.count, p.total)]
    assert p.rate.value == pytest.approx(p.count / p.total, abs=1e-12)
    assert (p.low, p.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


@pytest.fixture(scope="module")
def signatures(gold_people):
    return project_signatures(gold_people.project, SignatureQuery())


def test_it_counts_only_gold_traces(signatures):
    # 80 agreed/resolved items; the two open items and the trace without an item are not gold.
    assert (signatures.n_traces, signatures.n_failed, signatures.n_successful, signatures.n_unknown) == (
        80,
        40,
        40,
        0,
    )


def test_prevalence_overall_per_model_system_benchmark_and_category(signatures):
    overall = signatures.prevalence_by("all").groups[0]
    assert rates(overall) == {R: (18, 80), T: (8, 80), V: (24, 80)}
    # FC1 = R or T: blocks 1, 3, 4, 6, 8, 10, 13 -> 6 + 4 + 2 + 2 + 2 + 4 + 4 = 24.
    assert rates(overall, "categories") == {"FC1": (24, 80), "FC3": (24, 80)}
    by_model = {g.value: g for g in signatures.prevalence_by("model").groups}
    assert rates(by_model["gpt-4o"]) == {R: (12, 40), T: (4, 40), V: (16, 40)}
    assert rates(by_model["claude"]) == {R: (6, 40), T: (4, 40), V: (8, 40)}
    assert rates(by_model["gpt-4o"], "categories") == {"FC1": (16, 40), "FC3": (16, 40)}
    assert rates(by_model["claude"], "categories") == {"FC1": (8, 40), "FC3": (8, 40)}
    by_system = {g.value: g for g in signatures.prevalence_by("system").groups}
    assert rates(by_system["AG2"]) == {R: (10, 40), T: (8, 40), V: (20, 40)}
    assert rates(by_system["MetaGPT"]) == {R: (8, 40), V: (4, 40)}
    assert rates(by_system["AG2"], "categories") == {"FC1": (16, 40), "FC3": (20, 40)}
    assert rates(by_system["MetaGPT"], "categories") == {"FC1": (8, 40), "FC3": (4, 40)}
    by_benchmark = {g.value: g for g in signatures.prevalence_by("benchmark").groups}
    assert rates(by_benchmark["swe"]) == {R: (10, 10), V: (6, 10)}
    assert rates(by_benchmark["gaia"]) == {R: (8, 70), T: (8, 70), V: (18, 70)}
    assert rates(by_benchmark["swe"], "categories") == {"FC1": (10, 10), "FC3": (6, 10)}
    assert rates(by_benchmark["gaia"], "categories") == {"FC1": (14, 70), "FC3": (18, 70)}
    for table in signatures.prevalence:
        for group in table.groups:
            for p in (*group.modes, *group.categories):
                if p.count:
                    check_interval(p)
                else:
                    assert (p.rate.value, p.low) == (0.0, 0.0)


def test_modes_per_trace_for_failed_and_successful_traces_per_model(signatures):
    rows = {(r.group, r.outcome): r for r in signatures.modes_per_trace.rows}
    expected = {
        # gpt-4o failed: 6x2 + 4x1 + 4x2 + 2x1 + 4x0 = 26 modes on 20 traces.
        ("gpt-4o", "failure"): (20, 1.3, (4, 6, 10, 0)),
        # claude failed: 2x3 + 4x1 + 2x1 + 12x0 = 12 modes on 20 traces.
        ("claude", "failure"): (20, 0.6, (12, 6, 0, 2)),
        ("gpt-4o", "success"): (20, 0.3, (14, 6, 0, 0)),
        ("claude", "success"): (20, 0.3, (14, 6, 0, 0)),
        ("all", "failure"): (40, 0.95, (16, 12, 10, 2)),
        ("all", "success"): (40, 0.3, (28, 12, 0, 0)),
    }
    assert set(rows) == set(expected)
    for key, (n, mean, histogram) in expected.items():
        assert rows[key].n_traces == n
        assert rows[key].mean.value == pytest.approx(mean, abs=1e-12)
        assert rows[key].histogram == histogram


def test_benign_versus_fatal(signatures):
    contrast = {row.key: row for row in signatures.contrast.modes}
    step_repetition = contrast[R]  # 10/40 failed vs 8/40 successful: (0.25 - 0.2) / 0.2 = +25%
    assert (step_repetition.in_failed.count, step_repetition.in_successful.count) == (10, 8)
    assert step_repetition.relative_increase.value == pytest.approx(0.25, abs=1e-12)
    assert step_repetition.classification == "benign"
    assert step_repetition.warnings == ("intervals_overlap",)
    verification = contrast[V]  # 20/40 vs 4/40: (0.5 - 0.1) / 0.1 = +400%
    assert verification.relative_increase.value == pytest.approx(4.0, abs=1e-12)
    assert (verification.classification, verification.warnings) == ("fatal", ())
    termination = contrast[T]  # 8/40 vs 0/40: only in failures
    assert termination.relative_increase.value is None
    assert termination.relative_increase.undefined_code == "never_in_successes"
    assert termination.relative_increase.undefined_reason == "only in failures"
    assert (termination.classification, termination.warnings) == ("fatal", ())
    for row in (step_repetition, verification, termination):
        check_interval(row.in_failed)
        check_interval(row.in_successful)
    others = {row.classification for key, row in contrast.items() if key not in {R, T, V}}
    assert others == {"not_observed"}


def test_cooccurrence_lift_and_jaccard(signatures):
    c = signatures.cooccurrence
    i = {key: n for n, key in enumerate(c.keys)}
    assert (c.both[i[R]][i[R]], c.both[i[T]][i[T]], c.both[i[V]][i[V]]) == (18, 8, 24)
    assert (c.both[i[R]][i[V]], c.both[i[R]][i[T]], c.both[i[T]][i[V]]) == (8, 2, 6)
    assert c.lift[i[R]][i[V]] == pytest.approx(8 * 80 / (18 * 24))  # 1.4815
    assert c.lift[i[R]][i[T]] == pytest.approx(2 * 80 / (18 * 8))  # 1.1111
    assert c.lift[i[T]][i[V]] == pytest.approx(2.5)
    assert c.jaccard[i[R]][i[V]] == pytest.approx(8 / 34)
    assert c.jaccard[i[R]][i[T]] == pytest.approx(2 / 24)
    assert c.jaccard[i[T]][i[V]] == pytest.approx(6 / 26)
    assert c.lift[i["FM-1.1"]][i[R]] is None  # a mode that never occurs has no lift


def test_most_common_failure_vectors(signatures):
    top = [(v.modes, v.count, v.n_failed) for v in signatures.vectors.top]
    assert top == [
        ((V,), 12, 8),
        ((R,), 10, 2),
        ((R, V), 6, 6),
        ((T, V), 4, 4),
        ((R, T, V), 2, 2),  # ties with {T}: R comes first in the taxonomy
        ((T,), 2, 2),
    ]
    assert (signatures.vectors.n_with_modes, signatures.vectors.n_distinct) == (36, 6)
    assert signatures.vectors.top[0].share == pytest.approx(12 / 36)


def test_where_in_the_trace_failures_show(signatures):
    p = signatures.positions
    # R: 18 labels at step 2 (decile 2) and 6 more at step 3; T: 8 at step 5; V: 24 at step 9.
    assert p.deciles == (0, 0, 18, 6, 0, 8, 0, 0, 0, 24)
    assert (p.n_points, p.n_invalid) == (56, 1)  # step 10 of a 10-step trace is outside it
    agents = {a.agent: a.count for a in p.agents}
    assert agents == {"planner": 6 + 8 + 24, "coder": 18}  # odd steps are the planner's
    assert [a.agent for a in p.agents] == ["planner", "coder"]


def test_compare_two_batches_with_newcombe_intervals(gold_people):
    signatures = project_signatures(gold_people.project, SignatureQuery(compare=("before", "after")))
    c = signatures.comparison
    assert (c.a, c.b, c.n_a, c.n_b) == ("before", "after", 40, 40)
    rows = {row.key: row for row in c.modes}
    expected = {  # before -> after: R 12 -> 6, T 4 -> 4, V 16 -> 8 of 40
        R: (-0.15, -0.3235252780398096, 0.03445585633701065),
        T: (0.0, -0.14382460503402217, 0.14382460503402217),
        V: (-0.2, -0.3809797467508871, 0.001033903166517386),
    }
    for key, (difference, low, high) in expected.items():
        assert rows[key].difference.value == pytest.approx(difference, abs=1e-12)
        assert (rows[key].low, rows[key].high) == (
            pytest.approx(low, abs=1e-12),
            pytest.approx(high, abs=1e-12),
        )
        assert not rows[key].significant
    assert (rows[R].a.count, rows[R].b.count) == (12, 6)
