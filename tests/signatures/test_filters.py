"""Each filter (batch, model, system, benchmark; repeated values) narrows the gold world to the traces
the block table of tests/signatures/world.py predicts."""

from __future__ import annotations

import pytest

from annotator.services.signatures import SignatureQuery, project_signatures
from tests.signatures.world import R, T, V

pytestmark = pytest.mark.django_db


def counts(signatures) -> dict[str, int]:
    return {p.key: p.count for p in signatures.prevalence_by("all").groups[0].modes if p.count}


def run(people, **filters):
    return project_signatures(people.project, SignatureQuery(**filters))


def test_by_model(gold_people):
    s = run(gold_people, model=("claude",))
    assert (s.n_traces, s.n_failed, s.n_successful) == (40, 20, 20)
    assert counts(s) == {R: 6, T: 4, V: 8}
    assert [g.value for g in s.prevalence_by("model").groups] == ["claude"]


def test_by_several_models(gold_people):
    assert run(gold_people, model=("claude", "gpt-4o")).n_traces == 80


def test_by_system(gold_people):
    s = run(gold_people, system=("MetaGPT",))  # the 40 successful traces
    assert (s.n_traces, s.n_failed) == (40, 0)
    assert counts(s) == {R: 8, V: 4}
    assert {row.classification for row in s.contrast.modes} == {"undetermined"}


def test_by_benchmark(gold_people):
    s = run(gold_people, benchmark=("swe",))  # blocks 1 and 13
    assert (s.n_traces, s.n_failed, s.n_successful) == (10, 6, 4)
    assert counts(s) == {R: 10, V: 6}
    verification = next(row for row in s.contrast.modes if row.key == V)
    assert verification.classification == "fatal"  # only in failures here...
    assert verification.warnings == ("few_failed_traces", "few_successful_traces")  # ...but on 6 and 4 traces


def test_by_batch(gold_people):
    s = run(gold_people, batch=("before",))
    assert s.n_traces == 40
    assert counts(s) == {R: 12, T: 4, V: 16}
    assert s.positions.deciles == (0, 0, 12, 6, 0, 4, 0, 0, 0, 16)


def test_a_batch_filter_does_not_hide_the_compared_batches(gold_people):
    s = run(gold_people, batch=("before",), compare=("before", "after"))
    assert s.n_traces == 40
    assert (s.comparison.n_a, s.comparison.n_b) == (40, 40)


def test_filters_combine(gold_people):
    s = run(gold_people, model=("gpt-4o",), system=("AG2",), benchmark=("gaia",))  # blocks 2-5
    assert (s.n_traces, s.n_failed) == (14, 14)
    assert counts(s) == {R: 2, T: 4, V: 8}


def test_a_filter_nothing_matches_gives_no_figures(gold_people):
    assert run(gold_people, model=("no-such-model",)) is None
