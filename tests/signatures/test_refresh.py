"""After annotations and gold change, the refreshed figures are those a full computation gives, and the
refresh reloads only the traces that changed (annotator.services.signatures.refresh)."""

from __future__ import annotations

import random

import pytest

from annotator.models import AdjudicationItem, Annotation, GoldHistory, GoldLabel
from annotator.services.signatures import SignatureQuery
from annotator.services.signatures import refresh as signature_refresh
from annotator.services.signatures import report as signature_report
from taxonomy.models import FailureMode
from tests.factories import BatchFactory, UserFactory, add_member
from tests.labels import project_trace, submit

pytestmark = pytest.mark.django_db

MODES = ("FM-1.1", "FM-1.3", "FM-2.2", "FM-3.3")
SOURCES = ("gold+union", "gold+agreed", "union", "agreed", "gold", "gold+annotator:ana-annotator")


@pytest.fixture
def world(project, annotator_a, annotator_b):
    """12 traces over two batches, two models and both outcomes; a third annotator; gold on four."""
    carol = UserFactory(username="cat-annotator")
    add_member(project, carol, "annotator")
    batches = [BatchFactory(name=name) for name in ("before", "after")]
    traces = [
        project_trace(
            project,
            batch=batches[i % 2],
            model=("gpt-4o", "claude")[i % 3 == 0],
            outcome=("failure", "success", "unknown")[i % 3],
        )
        for i in range(12)
    ]
    rng = random.Random(7)
    for trace in traces[:4]:
        _set_gold(project, trace, rng)
    for trace in traces[2:8]:
        submit(project, trace, annotator_a, _labels(rng))
    return traces, [annotator_a, annotator_b, carol]


def _labels(rng: random.Random) -> dict[str, list[int]]:
    return {mode: [rng.randrange(0, 12)] for mode in rng.sample(MODES, rng.randrange(0, 3))}


def _set_gold(project, trace, rng: random.Random) -> None:
    """Gold for `trace` (or none), written the way the app records it: with a GoldHistory row."""
    item = AdjudicationItem.objects.filter(project=project, trace=trace).first()
    if item is not None and rng.random() < 0.3:
        item.delete()
    else:
        if item is None:
            item = AdjudicationItem.objects.create(project=project, trace=trace, status="agreed")
        GoldLabel.objects.filter(item=item).delete()
        modes = FailureMode.objects.filter(version=project.taxonomy_version, code__in=rng.sample(MODES, 2))
        for mode in modes[: rng.randrange(0, 3)]:
            GoldLabel.objects.create(item=item, mode=mode, evidence=[{"step": rng.randrange(0, 10)}])
    GoldHistory.objects.create(project=project, trace=trace, action="reevaluated")


def _change(project, traces, people, rng: random.Random) -> None:
    """One random change: a submit (new or edited), a deleted submitted annotation, or a gold decision."""
    what = rng.choice(("submit", "submit", "delete", "gold"))
    if what == "delete":
        annotation = (
            Annotation.objects.filter(assignment__project=project, status="submitted").order_by("?").first()
        )
        if annotation is not None:
            annotation.delete()
            return
    if what == "gold":
        _set_gold(project, rng.choice(traces), rng)
        return
    submit(project, rng.choice(traces), rng.choice(people), _labels(rng))


def _run_scenario(project, traces, people, seed: int) -> int:
    """Random changes, the figures of every source refreshed after each round and compared with a full
    computation; the number of refreshes that reloaded only some traces."""
    rng = random.Random(seed)
    for source in SOURCES:  # stored figures (and rows) for every source
        signature_report.build_report(project, SignatureQuery(source), keep_empty=True)
    partial = 0
    real_load = signature_refresh.load_trace_rows

    def counting_load(*args, only=None, **kwargs):
        nonlocal partial
        partial += only is not None
        return real_load(*args, only=only, **kwargs)

    signature_refresh.load_trace_rows = counting_load
    try:
        for _ in range(8):
            for _ in range(rng.randrange(1, 4)):
                _change(project, traces, people, rng)
            for source in SOURCES:
                query = SignatureQuery(source)
                refreshed = signature_report.build_report(project, query, keep_empty=True)
                full = signature_report.compute_report(project, query, keep_empty=True)
                assert refreshed == full, f"{source}: refreshed figures differ from a full computation"
    finally:
        signature_refresh.load_trace_rows = real_load
    return partial


@pytest.mark.parametrize("margin_minutes", [10, 0])
def test_refreshed_figures_equal_a_full_computation_after_random_changes(
    world, project, monkeypatch, margin_minutes
):
    from datetime import timedelta

    monkeypatch.setattr(signature_refresh, "REFRESH_MARGIN", timedelta(minutes=margin_minutes))
    traces, people = world
    assert _run_scenario(project, traces, people, seed=margin_minutes) > 0  # refreshed, not recomputed


def test_the_check_fails_when_stored_figures_are_carried_forward_unconditionally(world, project, monkeypatch):
    traces, people = world
    monkeypatch.setattr(signature_refresh, "describe", lambda *args, **kwargs: [])  # "nothing moved"
    with pytest.raises(AssertionError, match="differ from a full computation"):
        _run_scenario(project, traces, people, seed=10)


def test_a_new_annotation_of_a_gold_trace_carries_the_gold_figures_forward(world, project, monkeypatch):
    traces, people = world
    query = SignatureQuery("gold+union")
    before = signature_report.build_report(project, query)
    computed = []
    monkeypatch.setattr(signature_report, "report_of", lambda *a, **k: computed.append(1))
    submit(project, traces[0], people[2], {"FM-1.1": [3]})  # traces[0] has gold: its gold labels count
    assert signature_report.build_report(project, query) == before
    assert computed == []  # nothing recomputed: carried forward


def test_a_deleted_annotation_moves_the_figures(world, project):
    traces, _ = world
    query = SignatureQuery("union")
    before = signature_report.build_report(project, query)
    Annotation.objects.filter(assignment__trace=traces[7], status="submitted").delete()
    after = signature_report.build_report(project, query)
    assert after.signatures.n_traces == before.signatures.n_traces - 1
    assert after == signature_report.compute_report(project, query)
