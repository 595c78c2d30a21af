"""Issue 32, part 1, on small synthetic data: imported labels invent no rater's opinion (nothing usable is not
stored, a mode left out is missing, never "not chosen") and take no one's place (imported raters fill a
trace's overlap only when the project says they count; switching it re-plans without losing work)."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotator.models import AdjudicationItem, Annotation, Assignment
from annotator.services.adjudication import do_check_trace
from annotator.services.assignment import do_assign
from annotator.services.label_import import IncomingAnnotation, do_import_annotations
from annotator.services.reports.data import load_report_input
from tests.factories import BatchFactory, api_token, trace_with_steps
from tests.labels import submit
from traces.importers.records import AnnotationRecord, LabelRecord

CODES_WITHOUT_FM11 = [
    f"FM-{c}" for c in ("1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6")
]


def traces_of(project, n: int) -> list:
    batch = BatchFactory(name="runs")
    project.batches.add(batch)
    return [trace_with_steps(4, batch=batch, external_id=f"run-{k}") for k in range(n)]


def imported(project, traces, records_of, source: str = "published"):
    """Import one record per (trace, record) as a file would bring them (`records_of(k)` per trace)."""
    items = [
        IncomingAnnotation(trace, record, where=f"{source}.json, record {k + 1}", source=source)
        for k, trace in enumerate(traces)
        for record in records_of(k)
    ]
    return do_import_annotations(project, items, ignore_unknown_modes=True)


def agreement(project) -> dict:
    out = io.StringIO()
    call_command("agreement", project.slug, "--json", stdout=out)
    return json.loads(out.getvalue())


def slots(project) -> Counter:
    """Per annotator username: the project's work slots (imported raters included)."""
    return Counter(
        Assignment.objects.work().filter(project=project).values_list("annotator__username", flat=True)
    )


def humans_per_trace(project, traces, people) -> set[int]:
    rows = Assignment.objects.filter(project=project, annotator__in=people).values_list("trace_id", flat=True)
    counts = Counter(rows)
    return {counts[trace.pk] for trace in traces}


# --- Nothing usable is not stored -----------------------------------------------------------------------


def test_a_file_whose_labels_are_all_in_unknown_modes_stores_no_annotation(project, annotator_a, annotator_b):
    traces = traces_of(project, 4)
    do_assign(project)
    attribution = LabelRecord(mode="decisive-error", steps=[1], primary=True, note="WebSurfer: clicked away")
    result = imported(project, traces, lambda k: [AnnotationRecord("who_and_when", labels=[attribution])])
    assert (result.created, result.empty) == (0, 4)  # before: 4 submitted annotations with no label
    assert result.ignored_modes == Counter({"decisive-error": 4})
    assert not Annotation.objects.exists()
    assert humans_per_trace(project, traces, [annotator_a, annotator_b]) == {2}


def test_a_note_or_an_ambiguous_flag_alone_says_nothing_about_any_mode(project):
    traces = traces_of(project, 2)
    result = imported(
        project,
        traces,
        lambda k: [
            AnnotationRecord("r1", note="looks odd") if k == 0 else AnnotationRecord("r1", ambiguous=True),
            AnnotationRecord("r2", missing=["FM-1.1", *CODES_WITHOUT_FM11, "FM-3.1", "FM-3.2", "FM-3.3"]),
        ],
    )
    assert (result.created, result.empty) == (0, 4)
    assert not result.missing_votes  # votes of records that were not stored are not reported as kept


def test_known_labels_are_kept_and_the_unknown_ones_listed_beside_them(project):
    traces = traces_of(project, 1)
    record = AnnotationRecord("r1", labels=[LabelRecord("FM-1.1", steps=[2]), LabelRecord("retired mode")])
    result = imported(project, traces, lambda k: [record])
    annotation = Annotation.objects.get()
    assert (result.created, result.empty) == (1, 0)
    assert list(annotation.labels.values_list("mode__code", flat=True)) == ["FM-1.1"]
    assert annotation.provenance["unknown_labels"] == [{"mode": "retired mode", "steps": []}]


# --- Missing is missing, in the agreement report and in the adjudication check --------------------------


def test_modes_an_imported_rater_left_out_are_missing_in_the_report_and_the_queue(project):
    project.imported_labels_count_toward_overlap = True  # two published raters are the trace's two slots
    project.save()
    traces = traces_of(project, 1)
    # r1 chose FM-1.1 and voted on nothing else but FM-1.2 (a source with per-mode votes and NaNs); r2 chose
    # nothing on any mode. On FM-1.1 they disagree; every mode r1 left out is neither agreed nor disputed.
    left_out = [code for code in CODES_WITHOUT_FM11 if code != "FM-1.2"] + ["FM-3.1", "FM-3.2", "FM-3.3"]
    result = imported(
        project,
        traces,
        lambda k: [
            AnnotationRecord("r1", labels=[LabelRecord("FM-1.1")], missing=left_out),
            AnnotationRecord("r2", no_failure=True),
        ],
    )
    assert result.created == 2 and result.missing_votes == Counter(left_out)
    loaded = load_report_input(project, {}, source="tables")
    codes = [mode.code for mode in loaded.data.modes]
    ratings = loaded.data.ratings[0]  # (raters, modes) of the one trace; raters in username order
    assert list(loaded.data.raters) == ["published/r1", "published/r2"]
    assert ratings[0, codes.index("FM-1.1")] == 1 and ratings[0, codes.index("FM-1.2")] == 0
    assert all(ratings[0, codes.index(code)] == -1 for code in left_out)
    assert (ratings[1] == 0).all()
    item = do_check_trace(project.pk, traces[0].pk)
    assert item.status == AdjudicationItem.Status.OPEN and item.disputed == ["FM-1.1"]


def test_a_mode_one_rater_left_out_is_not_disputed_and_the_others_agree(project):
    project.imported_labels_count_toward_overlap = True
    project.save()
    traces = traces_of(project, 1)
    imported(
        project,
        traces,
        lambda k: [
            AnnotationRecord("r1", labels=[LabelRecord("FM-2.3")], missing=["FM-3.3"]),
            AnnotationRecord("r2", labels=[LabelRecord("FM-2.3"), LabelRecord("FM-3.3")]),
        ],
    )
    item = do_check_trace(project.pk, traces[0].pk)
    # Before: r1's missing FM-3.3 read as "not chosen", and the trace went to adjudication over it.
    assert item.status == AdjudicationItem.Status.AGREED and item.disputed == []
    gold = set(item.gold_labels.values_list("mode__code", flat=True))
    assert gold == {"FM-2.3", "FM-3.3"}  # r2's FM-3.3 is the only value given: nobody disputes it


# --- Imported raters fill no human slot unless the project says so ---------------------------------------


def two_published_raters(k: int) -> list[AnnotationRecord]:
    return [
        AnnotationRecord("p1", labels=[LabelRecord("FM-1.1")]),
        AnnotationRecord("p2", labels=[LabelRecord("FM-1.1" if k % 2 else "FM-2.6")]),
    ]


def test_imported_raters_fill_no_overlap_slot_by_default(client, project, owner, annotator_a, annotator_b):
    traces = traces_of(project, 6)
    imported(project, traces, two_published_raters)
    do_assign(project)
    # Before: the two published raters held both slots of every trace, and ana and ben got no work at all.
    assert humans_per_trace(project, traces, [annotator_a, annotator_b]) == {2}
    assert slots(project) == Counter(
        {"ana-annotator": 6, "ben-annotator": 6, "published/p1": 6, "published/p2": 6}
    )
    # Their traces reach adjudication only when ana and ben have both submitted, and only they are compared.
    submit(project, traces[0], annotator_a, {"FM-1.1": [1]})
    assert do_check_trace(project.pk, traces[0].pk) is None
    submit(project, traces[0], annotator_b, {"FM-1.1": [2]})
    item = do_check_trace(project.pk, traces[0].pk)
    assert item.status == AdjudicationItem.Status.AGREED and len(item.annotation_ids) == 2
    # The project's progress is the people's: 2 of 12 slots done, not 14 of 24.
    client.force_login(owner)
    counts = client.get(f"/p/{project.slug}/").context["counts"]
    assert (counts["submitted"], counts["total"]) == (2, 12)
    # So is each trace's on the trace list: the people's two slots, not the published raters' too.
    listed = client.get(f"/p/{project.slug}/traces/").content.decode()
    assert listed.count("2 / 2 submitted") == 1 and listed.count("0 / 2 submitted") == 5


def test_switching_the_setting_re_plans_and_keeps_every_submitted_and_started_annotation(
    client, project, owner, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    traces = traces_of(project, 6)
    imported(project, traces, two_published_raters)
    do_assign(project)
    done = submit(project, traces[0], annotator_a, {"FM-1.1": [1]})
    draft = Assignment.objects.get(project=project, trace=traces[1], annotator=annotator_b)
    Annotation.objects.create(assignment=draft, status=Annotation.Status.DRAFT)
    Assignment.objects.filter(pk=draft.pk).update(status=Assignment.Status.IN_PROGRESS)
    before = slots(project)

    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/members/").content.decode()
    assert (
        'name="imported_labels_count_toward_overlap"' in page
        and "Imported labels count toward overlap" in page
    )
    form = {"name": project.name, "overlap": "2", "reservation_minutes": "30", "guidelines": ""}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/p/{project.slug}/settings/", {**form, "imported_labels_count_toward_overlap": "on"})
    project.refresh_from_db()
    assert project.imported_labels_count_toward_overlap
    # On: the published raters fill every trace; the people keep only what they submitted or started.
    assert before["ana-annotator"] == before["ben-annotator"] == 6
    assert slots(project) == Counter(
        {"ana-annotator": 1, "ben-annotator": 1, "published/p1": 6, "published/p2": 6}
    )
    assert Annotation.objects.filter(pk=done.pk, status=Annotation.Status.SUBMITTED).exists()
    assert Annotation.objects.filter(assignment=draft).exists()
    # ... and the published raters' traces went through the adjudication check (p1 and p2 disagree on half).
    statuses = Counter(AdjudicationItem.objects.filter(project=project).values_list("status", flat=True))
    assert statuses == Counter({"agreed": 3, "open": 3})
    page = client.get(f"/p/{project.slug}/members/").content.decode()
    assert 'name="imported_labels_count_toward_overlap" checked' in page

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token(owner)}")
    assert api.get(f"/api/projects/{project.slug}/settings/").json()["imported_labels_count_toward_overlap"]
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.patch(
            f"/api/projects/{project.slug}/settings/",
            {"imported_labels_count_toward_overlap": False},
            format="json",
        )
    assert answer.status_code == 200 and answer.json()["imported_labels_count_toward_overlap"] is False
    # Off again: every trace has two people, the submitted and the drafted work among them.
    assert humans_per_trace(project, traces, [annotator_a, annotator_b]) == {2}
    assert Annotation.objects.filter(pk=done.pk, status=Annotation.Status.SUBMITTED).exists()
    assert Annotation.objects.filter(assignment=draft).exists()
    # The items built from the published raters alone are withdrawn (nobody had started them).
    assert not AdjudicationItem.objects.filter(project=project).exists()
    assert api.get(f"/api/projects/{project.slug}/").json()["imported_labels_count_toward_overlap"] is False


def test_a_new_project_may_count_imported_labels_from_the_start(mast):
    from tests.factories import UserFactory

    staff = UserFactory(username="sam-staff", is_staff=True)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token(staff)}")
    body = {
        "slug": "repro",
        "name": "Repro",
        "taxonomy": "mast",
        "imported_labels_count_toward_overlap": True,
    }
    answer = api.post("/api/projects/", body, format="json")
    assert answer.status_code == 201 and answer.json()["imported_labels_count_toward_overlap"] is True
    fresh = api.post("/api/projects/", {"slug": "fresh", "name": "Fresh", "taxonomy": "mast"}, format="json")
    assert fresh.json()["imported_labels_count_toward_overlap"] is False


@pytest.mark.parametrize("counted", [False, True])
def test_the_agreement_report_lists_imported_raters_either_way(project, annotator_a, annotator_b, counted):
    """The setting decides work and adjudication; the report always compares every rater who said something."""
    project.imported_labels_count_toward_overlap = counted
    project.save()
    traces = traces_of(project, 4)
    imported(project, traces, two_published_raters)
    report = agreement(project)
    assert [r["username"] for r in report["raters"]] == ["published/p1", "published/p2"]


def test_labels_imported_into_a_reproduction_take_back_the_untouched_slots_they_fill(
    project, annotator_a, annotator_b
):
    project.imported_labels_count_toward_overlap = True
    project.save()
    traces = traces_of(project, 4)
    do_assign(project)
    done = submit(project, traces[0], annotator_a, {"FM-1.1": [1]})
    assert humans_per_trace(project, traces, [annotator_a, annotator_b]) == {2}
    imported(project, traces[:2], two_published_raters)
    # The two published raters fill traces 0 and 1: ana keeps what she submitted, the rest goes back.
    held = Counter(
        Assignment.objects.filter(project=project, annotator__in=[annotator_a, annotator_b]).values_list(
            "trace_id", flat=True
        )
    )
    assert [held[trace.pk] for trace in traces] == [1, 0, 2, 2]
    assert Annotation.objects.filter(pk=done.pk, status=Annotation.Status.SUBMITTED).exists()


def mast_style_file(path, votes: dict[str, dict[str, bool | None]]):
    """A file in the format of MAST's human-labelled release: one trace, per mode each annotator's vote."""
    record = {
        "round": "Round 1",
        "mas_name": "AG2",
        "benchmark_name": "GSM-Plus",
        "trace_id": 0,
        "trace": "user: add 2 and 2\nassistant: 5\n",
        "annotations": [{"failure mode": f"{mode}\n\nA definition.", **by} for mode, by in votes.items()],
    }
    path.write_text(json.dumps([record]).replace("null", "NaN"))
    return path


def test_a_per_mode_vote_file_gives_values_only_for_the_modes_it_lists(project, tmp_path):
    """Before: modes the file never listed read as "not chosen"; a rater whose only yes was a retired mode
    said no to the modes listed, so that rater is kept; a rater with every vote left out is not stored."""
    path = mast_style_file(
        tmp_path / "study.json",
        {
            "1.1 Disobey Task Specification": {
                "annotator_1": False,
                "annotator_2": True,
                "annotator_3": None,
            },
            "2.1 Unbatched repetitive execution": {
                "annotator_1": True,
                "annotator_2": False,
                "annotator_3": None,
            },
            "3.3 Incorrect Verification": {"annotator_1": False, "annotator_2": None, "annotator_3": None},
        },
    )
    out = io.StringIO()
    call_command(
        "import_traces", str(path), batch="study", project=project.slug, ignore_unknown_modes=True, stdout=out
    )
    assert "1 records had nothing usable" in out.getvalue()
    by = {
        a.assignment.annotator.username: a for a in Annotation.objects.select_related("assignment__annotator")
    }
    assert set(by) == {"study/annotator_1", "study/annotator_2"}
    loaded = load_report_input(project, {}, source="tables")
    codes = [mode.code for mode in loaded.data.modes]
    values = {
        rater: {code: int(loaded.data.ratings[0, r, k]) for k, code in enumerate(codes)}
        for r, rater in enumerate(loaded.data.raters)
    }
    unlisted = {code: -1 for code in codes if code not in ("FM-1.1", "FM-3.3")}
    assert values["study/annotator_1"] == {**unlisted, "FM-1.1": 0, "FM-3.3": 0}
    assert values["study/annotator_2"] == {**unlisted, "FM-1.1": 1, "FM-3.3": -1}
    # The same through import_annotations (the labels of traces already imported).
    Annotation.objects.all().delete()
    call_command("import_annotations", str(path), project=project.slug, ignore_unknown_modes=True, stdout=out)
    again = load_report_input(project, {}, source="tables")
    assert (again.data.ratings == loaded.data.ratings).all()


def test_the_plan_trims_only_movable_slots_of_traces_over_their_overlap():
    from annotator.assignment_strategy import Slot, plan_assignments

    # Traces 1 and 2 are held by two imported raters (100, 101) and two people (1, 2); person 1 also holds
    # trace 3 alone. Person 2's slot on trace 2 is finished (not movable).
    existing = [(1, 100), (1, 101), (1, 1), (1, 2), (2, 100), (2, 101), (2, 1), (2, 2), (3, 1), (3, 2)]
    movable = [(1, 1), (1, 2), (2, 1), (3, 1), (3, 2)]
    kept = plan_assignments([1, 2, 3], [1, 2], 2, existing, movable)
    assert kept.remove == () and kept.add == ()  # without trim nothing moves
    plan = plan_assignments([1, 2, 3], [1, 2], 2, existing, movable, trim=True)
    assert set(plan.remove) == {Slot(1, 1), Slot(1, 2), Slot(2, 1)} and plan.add == ()
