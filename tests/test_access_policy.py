"""One access policy (annotator.access.ProjectAccess): answer keys kept apart, blind beats every role, and a
lock that does not say whether the other annotator agreed (issue 11, points 4 and 8)."""

from __future__ import annotations

import json

import pytest
from django.apps import apps as django_apps

from annotator.access import ProjectAccess
from annotator.models import AdjudicationItem, Assignment
from annotator.services.adjudication import do_check_trace
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, add_member, trace_with_steps
from tests.labels import submit
from traces.models import Trace
from traces.services import do_import_files

WHO_AND_WHEN = {
    "question": "How many studio albums did the band release?",
    "ground_truth": "7",
    "history": [
        {"role": "human", "content": "How many studio albums?"},
        {"role": "assistant", "name": "WebSurfer", "content": "I found 9 albums."},
        {"role": "assistant", "name": "Orchestrator", "content": "Final answer: 9"},
    ],
    "mistake_agent": "WebSurfer",
    "mistake_step": "1",
    "mistake_reason": "Counted compilations as studio albums (ANSWER-KEY-MARK)",
}


@pytest.fixture
def imported(project, tmp_path):
    """A Who&When trace imported into the project, assigned to both annotators."""
    path = tmp_path / "Hand-Crafted" / "1.json"
    path.parent.mkdir()
    path.write_text(json.dumps(WHO_AND_WHEN))
    result = do_import_files([(path, "1.json")], batch_name="who-and-when", keep_annotations=False)
    project.batches.add(result.batch)
    do_assign(project)
    return Trace.objects.get(batch=result.batch)


def _api(client, user, project, trace) -> dict:
    client.force_login(user)
    response = client.get(f"/api/projects/{project.slug}/traces/{trace.pk}/")
    assert response.status_code == 200
    return response.json()


# Point 4: the answer key ----------------------------------------------------------------------------------


def test_an_import_keeps_the_answer_key_out_of_the_metadata(imported):
    assert imported.answer_key["mistake_agent"] == "WebSurfer"
    assert imported.answer_key["mistake_step"] == 1
    assert "mistake_agent" not in imported.metadata and "mistake_reason" not in imported.metadata
    assert imported.metadata["ground_truth"] == "7"  # the task's reference answer is not a verdict


def test_the_trace_api_does_not_give_an_annotator_the_answer_key(client, project, imported, annotator_a):
    body = _api(client, annotator_a, project, imported)
    assert "ANSWER-KEY-MARK" not in json.dumps(body)
    assert "mistake_agent" not in json.dumps(body)
    assert body["answer_key"] is None
    assert body["metadata"]["ground_truth"] == "7"


def test_owners_and_adjudicators_read_the_answer_key(client, project, imported, owner, adjudicator):
    for user in (owner, adjudicator):
        body = _api(client, user, project, imported)
        assert body["answer_key"]["mistake_agent"] == "WebSurfer"
        assert "mistake_agent" not in body["metadata"]


def test_the_annotate_page_shows_no_answer_key_and_the_review_page_does(
    client, project, imported, annotator_a, owner
):
    slot = Assignment.objects.get(project=project, annotator=annotator_a, trace=imported)
    client.force_login(annotator_a)
    html = client.get(f"/p/{project.slug}/a/{slot.pk}/").content.decode()
    assert "ANSWER-KEY-MARK" not in html and "ground_truth" in html
    client.force_login(owner)
    assert "ANSWER-KEY-MARK" in client.get(f"/p/{project.slug}/t/{imported.pk}/review/").content.decode()


def test_the_data_migration_moves_stored_answer_keys(db):
    from importlib import import_module
    from pathlib import Path

    import traces.migrations

    # Found by name, not number: migrations may be renumbered when branches merge.
    (path,) = Path(traces.migrations.__file__).parent.glob("*_move_answer_keys.py")
    migration = import_module(f"traces.migrations.{path.stem}")
    trace = trace_with_steps(1, batch=BatchFactory(name="old"))
    Trace.objects.filter(pk=trace.pk).update(
        metadata={"mistake_agent": "Coder", "failure_modes": ["1.1"], "level": 2}, answer_key={}
    )
    migration.forwards(django_apps, None)
    trace.refresh_from_db()
    assert trace.metadata == {"level": 2}
    assert trace.answer_key == {"mistake_agent": "Coder", "failure_modes": ["1.1"]}
    migration.backwards(django_apps, None)
    trace.refresh_from_db()
    assert trace.metadata == {"level": 2, "mistake_agent": "Coder", "failure_modes": ["1.1"]}


def test_a_native_export_keeps_the_answer_key_for_a_round_trip(imported):
    from traces.exports import trace_to_record

    record = trace_to_record(imported, imported.steps.order_by("index"))
    assert record.metadata["mistake_agent"] == "WebSurfer"


# Point 8: blind beats every other role ---------------------------------------------------------------------


def mark(annotation, text: str) -> None:
    """Plant `text` as the annotation's note and its labels' notes."""
    annotation.note = text
    annotation.save(update_fields=["note"])
    annotation.labels.update(note=text)


@pytest.fixture
def world(project, owner, annotator_a, annotator_b, adjudicator):
    """Two traces. On `open_trace` the owner and the adjudicator also hold annotator slots they have not
    submitted, while A and B have submitted and disagree (so it has an open adjudication item); on
    `done_trace` only A and B annotate."""
    batch = BatchFactory(name="run-blind")
    project.batches.add(batch)
    open_trace, done_trace = trace_with_steps(6, batch=batch), trace_with_steps(6, batch=batch)
    for user in (owner, adjudicator):
        add_member(project, user, "annotator")
        Assignment.objects.create(project=project, trace=open_trace, annotator=user)
    open_trace.answer_key = {"mistake_reason": "KEY-MARK"}
    open_trace.save()
    for trace in (open_trace, done_trace):
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        mark(submit(project, trace, annotator_b, {"FM-2.1": [2]}), "B-NOTE-MARK")
        do_check_trace(project.pk, trace.pk)
    return open_trace, done_trace


@pytest.mark.parametrize("who", ["owner", "adjudicator"])
def test_a_reviewer_who_annotates_a_trace_sees_none_of_its_labels_before_submitting(
    client, project, world, who, request
):
    user = request.getfixturevalue(who)
    open_trace, done_trace = world
    item = AdjudicationItem.objects.get(project=project, trace=open_trace)
    client.force_login(user)
    base = f"/p/{project.slug}"
    refused = [
        f"{base}/t/{open_trace.pk}/review/",
        f"{base}/t/{open_trace.pk}/review/steps/",
        f"/api/projects/{project.slug}/traces/{open_trace.pk}/annotations/",
    ]
    for url in refused:
        response = client.get(url)
        assert response.status_code == 403, url
        assert "B-NOTE-MARK" not in response.content.decode()
    for url in (f"{base}/adjudication/{item.pk}/", f"/api/projects/{project.slug}/adjudication/{item.pk}/"):
        assert client.get(url).status_code == 404, url
    queue = client.get(f"{base}/adjudication/").content.decode()
    assert f"/adjudication/{item.pk}/" not in queue
    api_queue = client.get(f"/api/projects/{project.slug}/adjudication/").json()
    assert item.pk not in [row["id"] for row in api_queue["results"]]
    assert client.get(f"/api/projects/{project.slug}/traces/{open_trace.pk}/").json()["answer_key"] is None
    # Reports and exports show every trace's labels: refused while any trace is still to annotate.
    for url in (f"{base}/agreement/", f"{base}/export/", f"/api/projects/{project.slug}/agreement/"):
        assert client.get(url).status_code == 403, url
    # The other trace is not blind: its labels are there.
    assert "B-NOTE-MARK" in client.get(f"{base}/t/{done_trace.pk}/review/").content.decode()


def test_claiming_the_next_item_skips_a_trace_the_adjudicator_still_annotates(
    client, project, world, adjudicator
):
    open_trace, done_trace = world
    client.force_login(adjudicator)
    claimed = client.post(f"/api/projects/{project.slug}/adjudication/claim/").json()
    assert claimed["item"]["trace"]["id"] == done_trace.pk
    assert AdjudicationItem.objects.get(project=project, trace=open_trace).claimed_by is None
    # Keeping the claim: asking again returns the same item, never the blind one.
    again = client.post(f"/api/projects/{project.slug}/adjudication/claim/").json()
    assert again["item"]["trace"]["id"] == done_trace.pk


def test_labels_open_once_the_reviewer_submitted_their_own(client, project, world, owner):
    open_trace, _ = world
    submit(project, open_trace, owner, {"FM-1.1": [1]})
    client.force_login(owner)
    assert "B-NOTE-MARK" in client.get(f"/p/{project.slug}/t/{open_trace.pk}/review/").content.decode()
    answer_key = client.get(f"/api/projects/{project.slug}/traces/{open_trace.pk}/").json()["answer_key"]
    assert answer_key == {"mistake_reason": "KEY-MARK"}


def test_a_project_that_is_not_blind_has_no_blind_traces(project, world, owner):
    open_trace, _ = world
    project.blind = False
    project.save()
    assert ProjectAccess.of(owner, project).may_see_labels(open_trace)


def test_the_policy_has_no_default_role(project, outsider, client):
    from django.http import Http404

    with pytest.raises(Http404):
        ProjectAccess.load(outsider, project.slug)
    client.force_login(outsider)
    assert client.get(f"/api/projects/{project.slug}/traces/").status_code == 404


# Point 8: the "locked" badge -------------------------------------------------------------------------------


def test_the_locked_badge_is_the_same_whether_the_other_annotator_agreed_or_not(
    client, project, annotator_a, annotator_b, adjudicator
):
    batch = BatchFactory(name="run-lock")
    project.batches.add(batch)
    agreed, disputed = trace_with_steps(4, batch=batch), trace_with_steps(4, batch=batch)
    submit(project, agreed, annotator_a, {"FM-1.1": [1]})
    submit(project, agreed, annotator_b, {"FM-1.1": [2]})
    submit(project, disputed, annotator_a, {"FM-1.1": [1]})
    submit(project, disputed, annotator_b, {"FM-2.1": [2]})
    assert do_check_trace(project.pk, agreed.pk).status == AdjudicationItem.Status.AGREED
    item = do_check_trace(project.pk, disputed.pk)
    item.claimed_by = adjudicator
    item.save()
    client.force_login(annotator_a)
    html = client.get(f"/p/{project.slug}/").content.decode()
    assert html.count(">locked<") == 2 and ">editable<" not in html
    mine = Assignment.objects.filter(project=project, annotator=annotator_a).order_by("trace_id")
    editable = [
        client.get(f"/api/projects/{project.slug}/assignments/{slot.pk}/annotation/").json()["editable"]
        for slot in mine
    ]
    assert editable == [False, False]


def test_the_policy_hands_out_querysets_without_the_blind_traces(
    project, world, owner, annotator_a, viewer_user
):
    _, done_trace = world  # the owner is still annotating the other trace
    reviewer = ProjectAccess.of(owner, project)
    traces_with_labels = set(reviewer.annotations().values_list("assignment__trace_id", flat=True).distinct())
    assert traces_with_labels == {done_trace.pk}
    assert set(reviewer.labels().values_list("annotation__assignment__trace_id", flat=True)) == {
        done_trace.pk
    }
    assert set(reviewer.adjudication_items().values_list("trace_id", flat=True)) == {done_trace.pk}
    assert set(reviewer.label_traces().values_list("pk", flat=True)) == {done_trace.pk}
    assert list(reviewer.batches()) == list(project.batches.all())
    # A plain annotator reads their own annotations only; a viewer reads none.
    annotator = ProjectAccess.of(annotator_a, project)
    assert set(annotator.annotations().values_list("assignment__annotator", flat=True)) == {annotator_a.pk}
    assert not annotator.adjudication_items().exists() and not annotator.gold().exists()
    assert not ProjectAccess.of(viewer_user, project).annotations().exists()


@pytest.fixture
def viewer_user(project):
    from tests.factories import UserFactory

    user = UserFactory(username="vera-viewer")
    add_member(project, user, "viewer")
    return user
