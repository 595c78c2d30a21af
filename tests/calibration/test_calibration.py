"""Gold calibration: an annotator labels gold items, sees the gold answer only after submitting, and their
per-mode scores equal a hand computation; qualification gates real work; the mix-in rate; calibration
answers change no report, queue, signature or export; who sees whose scores."""

from __future__ import annotations

import json
import math

import pytest
from django.core.management import call_command

from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel
from annotator.services.adjudication import do_check_traces
from annotator.services.assignment import do_assign, do_claim_next
from annotator.services.calibration import (
    CalibrationError,
    annotator_scores,
    do_add_items,
    do_configure,
    gate,
)
from tests.factories import BatchFactory, UserFactory, add_member, trace_with_steps

HX = {"HTTP_HX_REQUEST": "true"}
CAL = Assignment.Purpose.CALIBRATION


def page(slot) -> str:
    return f"/p/{slot.project.slug}/a/{slot.pk}/"


def labels_form(*codes: str) -> dict:
    data = {"version": "0", "elapsed": "5", "labels": list(codes)}
    if not codes:
        data["no_failure"] = "1"
    return data


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The textbook formula, written out again: p̂ ± z·sqrt(p̂(1-p̂)/n + z²/4n²), centred and scaled."""
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = (z / (1 + z**2 / n)) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def test_an_annotator_sees_the_gold_only_after_submitting_and_scores_match_a_hand_computation(
    client, project, calibrated, carl
):
    do_configure(project, qualification_size=3)
    client.force_login(carl)
    answers = {calibrated[0].pk: ["FM-1.1"], calibrated[1].pk: ["FM-1.1", "FM-1.2"], calibrated[2].pk: []}
    for _ in range(3):
        slot = do_claim_next(project, carl)
        assert slot.purpose == CAL
        before = client.get(page(slot)).content.decode()
        assert 'id="gold-feedback"' not in before and "Gold answer" not in before
        assert "Step 2 repeats the task verbatim" not in before  # the adjudicator's reason stays hidden
        response = client.post(page(slot) + "submit/", labels_form(*answers[slot.trace_id]), **HX)
        assert response.status_code == 204 and response["HX-Redirect"] == page(slot)  # back, to see the gold
        after = client.get(page(slot)).content.decode()
        assert 'id="gold-feedback"' in after
        if slot.trace_id == calibrated[1].pk:
            assert "Step 2 repeats the task verbatim" in after and "No role was ignored" in after
            assert "The trace shows it (evidence cited)" in after and "Mostly a repetition problem" in after
            assert "Nothing in the trace supports it" in after
        if slot.trace_id == calibrated[0].pk:
            assert "All annotators agreed" in after
        # The answer is frozen once the gold is shown.
        again = client.post(page(slot) + "submit/", {**labels_form("FM-3.1"), "version": "1"}, **HX)
        assert again.status_code == 409

    scores = annotator_scores(project)["carl-calibrating"]
    by_mode = {m.mode: m for m in scores.modes}
    assert scores.n_items == 3
    # Gold: T1 {1.1, 3.1}, T2 {1.1}, T3 {}. Carl: T1 {1.1}, T2 {1.1, 1.2}, T3 {}.
    # FM-1.1: TP 2, TN 1 -> sensitivity 1, specificity 1, kappa 1 (p_o 1, p_e 5/9).
    m = by_mode["FM-1.1"]
    assert (m.counts.tp, m.counts.fp, m.counts.fn, m.counts.tn) == (2, 0, 0, 1)
    assert m.sensitivity == 1 and m.specificity == 1 and m.kappa == pytest.approx(1.0)
    assert m.kappa_ci is None and m.kappa_ci_undefined  # p_o = 1: the approximate SE is 0, no interval
    assert m.sensitivity_ci == pytest.approx(wilson(2, 2)) and m.specificity_ci == pytest.approx(wilson(1, 1))
    # FM-1.2: FP 1, TN 2 -> no gold positive, specificity 2/3, p_o 2/3, p_e (1/3)(0) + (2/3)(1) = 2/3 -> kappa 0.
    m = by_mode["FM-1.2"]
    assert (m.counts.tp, m.counts.fp, m.counts.fn, m.counts.tn) == (0, 1, 0, 2)
    assert m.sensitivity is None and m.specificity == pytest.approx(2 / 3)
    assert m.specificity_ci == pytest.approx(wilson(2, 3))
    assert m.kappa == pytest.approx(0.0)
    # SE = sqrt(p_o(1-p_o) / (n(1-p_e)^2)) = sqrt((2/9) / (3 * 1/9)) = sqrt(2/3): ±1.60, clipped to [-1, 1].
    assert 1.959963984540054 * math.sqrt(2 / 3) > 1 and m.kappa_ci == (-1.0, 1.0)
    # FM-3.1: FN 1, TN 2 -> sensitivity 0, specificity 1, kappa 0.
    m = by_mode["FM-3.1"]
    assert (m.counts.tp, m.counts.fp, m.counts.fn, m.counts.tn) == (0, 0, 1, 2)
    assert (
        m.sensitivity == 0 and m.sensitivity_ci == pytest.approx(wilson(0, 1)) and m.kappa == pytest.approx(0)
    )
    # A mode nobody chose: kappa undefined, and said so.
    assert by_mode["FM-2.1"].kappa is None and by_mode["FM-2.1"].kappa_undefined
    # Pooled over 3 items x 14 modes = 42 cells: TP 2, FP 1, FN 1, TN 38.
    o = scores.overall
    assert (o.counts.tp, o.counts.fp, o.counts.fn, o.counts.tn) == (2, 1, 1, 38)
    p_o, p_e = 40 / 42, (3 / 42) * (3 / 42) + (39 / 42) * (39 / 42)
    assert o.kappa == pytest.approx((p_o - p_e) / (1 - p_e))
    # The page shows Carl his own scores, the same numbers.
    assert "My calibration scores" in client.get(f"/p/{project.slug}/").content.decode()
    html = client.get(f"/p/{project.slug}/calibration/").content.decode()
    assert "My scores" in html and 'data-mode="FM-1.2"' in html and "0.667" in html


def test_calibration_slots_go_only_to_people_who_never_labelled_the_trace(project, calibrated, annotator_a):
    do_configure(project, qualification_size=3)
    slot = do_claim_next(project, annotator_a)  # Ana labelled every gold trace for real
    assert slot is None or slot.purpose == "work"
    assert not Assignment.objects.filter(annotator=annotator_a, purpose=CAL).exists()


def test_only_gold_traces_can_be_calibration_items(project, gold_traces, owner):
    other = trace_with_steps(3, batch=gold_traces[0].batch)
    with pytest.raises(CalibrationError, match="Not a gold trace"):
        do_add_items(project, trace_ids=[gold_traces[0].pk, other.pk], actor=owner)
    assert do_add_items(project, batch="gold-batch", actor=owner) == 3
    with pytest.raises(CalibrationError, match="mix-in rate"):
        do_configure(project, rate=0.9)


def test_qualification_holds_back_real_work_until_done_and_above_the_threshold(
    client, project, calibrated, carl
):
    extra = BatchFactory(name="work")
    project.batches.add(extra)
    work = [trace_with_steps(3, batch=extra) for _ in range(4)]
    do_assign(project)
    do_configure(project, qualification_size=2, min_kappa=0.5)
    real = Assignment.objects.filter(project=project, annotator=carl, purpose="work").first()
    assert real is not None and real.trace_id in {t.pk for t in work}
    client.force_login(carl)
    # Before qualifying: the queue says why, and saving real work is refused with the reason.
    assert "Qualification first" in client.get(f"/p/{project.slug}/").content.decode()
    refused = client.post(page(real) + "submit/", labels_form(), **HX)
    assert refused.status_code == 409 and "Qualification first" in refused.content.decode()
    # Two calibration items, both answered "no failure": T1 and T2 had failures, so kappa is poor.
    for _ in range(2):
        slot = do_claim_next(project, carl)
        assert slot.purpose == CAL
        client.post(page(slot) + "submit/", labels_form(), **HX)
    state = gate(project, carl)
    assert state.blocked and "below this project's threshold" in state.reason
    assert "below this project" in client.get(page(real)).content.decode()
    # Held back, Carl is offered the calibration item left (a chance to catch up), then nothing.
    slot = do_claim_next(project, carl)
    assert slot.purpose == CAL
    client.post(page(slot) + "submit/", labels_form(), **HX)
    assert do_claim_next(project, carl) is None
    held = client.post(f"/p/{project.slug}/next/", follow=True).content.decode()
    assert "below this project" in held and "Nothing left to start" not in held
    # The owner lowers the threshold: real work flows.
    do_configure(project, clear_min_kappa=True)
    assert do_claim_next(project, carl).purpose == "work"


def test_the_mix_in_rate_serves_every_kth_claim(project, calibrated, carl):
    extra = BatchFactory(name="work")
    project.batches.add(extra)
    for _ in range(8):
        trace_with_steps(2, batch=extra)
    do_assign(project)
    do_configure(project, rate=0.25)
    served = []
    for _ in range(8):
        slot = do_claim_next(project, carl)
        served.append(slot.purpose)
        Assignment.objects.filter(pk=slot.pk).update(status=Assignment.Status.SUBMITTED, reserved_until=None)
    assert served == ["work", "work", "work", CAL, "work", "work", "work", CAL]


def test_do_assign_neither_counts_nor_moves_calibration_slots(project, calibrated, carl):
    do_configure(project, qualification_size=1)
    slot = do_claim_next(project, carl)
    Assignment.objects.filter(pk=slot.pk).update(reserved_until=None)
    newcomer = UserFactory(username="nina-new")
    add_member(project, newcomer, "annotator")
    do_assign(project)
    slot.refresh_from_db()
    assert slot.annotator == carl and slot.purpose == CAL


def test_raising_the_overlap_never_gives_a_gold_trace_to_whoever_calibrated_on_it(project, calibrated, carl):
    do_configure(project, qualification_size=3)
    seen = [do_claim_next(project, carl).trace_id for _ in range(3)]
    assert sorted(seen) == sorted(t.pk for t in calibrated)
    dana = UserFactory(username="dana-new")
    add_member(project, dana, "annotator")
    project.overlap = 3
    project.save(update_fields=["overlap"])
    do_assign(project)
    for trace in calibrated:
        real = Assignment.objects.work().filter(project=project, trace=trace)
        assert real.count() == 3, "the trace got its third annotator"
        assert not real.filter(annotator=carl).exists()
        assert real.filter(annotator=dana).exists()


def _everything(project, client, owner) -> dict:
    """What reports, the adjudication queue, signatures and exports make of the project."""
    from annotator.services.exports.dataset import mode_columns
    from annotator.services.exports.options import ExportOptions
    from annotator.services.exports.rows import annotation_rows, gold_rows, pseudonyms_for, selected_traces
    from annotator.services.reports.data import load_report_input

    client.force_login(owner)
    loaded = load_report_input(project, {})
    agreement = client.get(f"/api/projects/{project.slug}/agreement/?fresh=1")
    call_command("agreement", project.slug, "--json", stdout=(out := _Buffer()))
    traces = selected_traces(project, ExportOptions())
    modes = mode_columns(project.taxonomy_version.modes.order_by("order").values_list("code", "name"))
    names = pseudonyms_for(project, traces, True)
    return {
        "export_annotations": list(annotation_rows(project, traces, modes, names, include_text=False)),
        "export_gold": list(gold_rows(project, traces, modes, names)),
        "items": list(
            AdjudicationItem.objects.filter(project=project).values_list("trace_id", "status", "version")
        ),
        "gold": list(
            GoldLabel.objects.filter(item__project=project).values_list("item__trace_id", "mode__code")
        ),
        "submitted_in": sorted(Annotation.objects.submitted_in(project).values_list("pk", flat=True)),
        "raters": [r["username"] for r in loaded.raters],
        "ratings": loaded.data.ratings.tolist(),
        "agreement_status": agreement.status_code,
        "cli": _strip_times(out.value),
        "signatures": client.get(f"/api/projects/{project.slug}/signatures/").json(),
        "review": client.get(
            f"/p/{project.slug}/t/{project.batches.first().traces.order_by('pk').first().pk}/review/"
        ).status_code,
    }


class _Buffer:
    def __init__(self):
        self.value = ""

    def write(self, text):
        self.value += text

    def flush(self):
        pass


def _strip_times(text: str) -> object:
    try:
        data = json.loads(text)
    except ValueError:
        return text
    for key in (
        "computed_at",
        "created_at",
        "report_id",
        "id",
        "methods",
        "fingerprint",
        "inputs_fingerprint",
    ):
        data.pop(key, None)
    return data


def test_a_calibration_answer_changes_no_report_queue_signature_or_export(
    client, project, calibrated, carl, owner
):
    before = _everything(project, client, owner)
    do_configure(project, qualification_size=1)
    slot = do_claim_next(project, carl)
    client.force_login(carl)
    client.post(page(slot) + "submit/", labels_form("FM-2.1", "FM-2.2"), **HX)
    assert Annotation.objects.filter(assignment=slot, status="submitted").exists()
    do_check_traces(project.pk, [t.pk for t in calibrated])  # the reconciliation, too, ignores it
    after = _everything(project, client, owner)
    assert after == before


def test_a_round_over_a_gold_trace_leaves_the_calibration_slot_out(
    project, calibrated, carl, annotator_a, owner
):
    from annotator.services.rounds import TraceChoice, do_open_round, round_progress

    do_configure(project, qualification_size=1)
    slot = do_claim_next(project, carl)
    round_ = do_open_round(
        project,
        name="R1",
        annotators=[carl.username, annotator_a.username],
        choice=TraceChoice(ids=(slot.trace_id,)),
        actor=owner,
    )
    slot.refresh_from_db()
    assert slot.calibration_round is None and slot.purpose == CAL
    assert round_progress([round_])[round_.pk] == (1, 1)  # Ana's real, submitted slot only
