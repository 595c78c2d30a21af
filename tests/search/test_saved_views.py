"""Saved views: saved from the trace list, the API and the CLI; shared in the project with a count computed
per member; opened, renamed, deleted; blind holds on a view whose filters reveal labels."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.access import ProjectAccess
from annotator.models import Assignment, SavedView
from annotator.search.filters import TraceFilter, parse
from annotator.search.saved import ViewError, do_save_view, project_views, view_traces
from annotator.search.service import filtered_traces
from tests.factories import UserFactory, add_member

API = "/api/projects/demo-project/views/"
TRACES = "/api/projects/demo-project/traces/"
PAGE = "/p/demo-project/traces/"


def _save(project, user, name, **params) -> SavedView:
    return do_save_view(ProjectAccess.of(user, project), name, parse(params))


@pytest.fixture
def viewer(project):
    user = UserFactory(username="vera-viewer")
    add_member(project, user, "viewer")
    return user


def test_a_view_stores_the_filter_and_counts_what_each_member_may_see(world, owner, annotator_a):
    view = _save(world.project, owner, "GPT-4o", model="gpt-4o")
    assert view.params == [["model", "gpt-4o"]]
    rows = {row.view.name: row for row in project_views(ProjectAccess.of(owner, world.project))}
    assert rows["GPT-4o"].count == 3  # sre-1, web-1, web-2
    # The same view is shared; an annotator counts only the traces assigned to them (sre-1, web-2).
    rows = {row.view.name: row for row in project_views(ProjectAccess.of(annotator_a, world.project))}
    assert rows["GPT-4o"].count == 2


def test_names_are_unique_in_the_project_whatever_the_case(world, owner):
    _save(world.project, owner, "Failures", outcome="failure")
    with pytest.raises(ViewError) as caught:
        _save(world.project, owner, "failures", outcome="failure")
    assert caught.value.field == "name" and "already" in caught.value.message
    with pytest.raises(ViewError):
        _save(world.project, owner, "  ")
    with pytest.raises(ViewError):
        _save(world.project, owner, "123")  # digits name a view by id


def test_a_stale_parameter_is_named_after_a_taxonomy_change(world, owner):
    view = _save(world.project, owner, "Gold 1.3", gold_mode="FM-1.3")
    SavedView.objects.filter(pk=view.pk).update(params=[["gold_mode", "FM-9.9"]])
    (row,) = project_views(ProjectAccess.of(owner, world.project))
    assert row.count is None and row.error.startswith("gold_mode: no failure mode 'FM-9.9'")


def test_api_create_list_open_rename_delete(client, world, owner):
    client.force_login(owner)
    created = client.post(
        API, {"name": "Disputed", "params": {"state": "in_adjudication"}}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["count"] == 1 and body["params"] == {"state": ["in_adjudication"]} and body["may_manage"]
    view_id = body["id"]
    duplicate = client.post(API, {"name": "disputed", "params": {}}, content_type="application/json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()["fields"]
    bad = client.post(API, {"name": "Bad", "params": {"outcome": "maybe"}}, content_type="application/json")
    assert bad.status_code == 400 and "params.outcome" in bad.json()["fields"]
    assert [v["name"] for v in client.get(API).json()] == ["Disputed"]
    # The view applied to the trace list, by id and by name.
    for ref in (view_id, "Disputed"):
        names = [t["external_id"] for t in client.get(TRACES, {"view": ref}).json()["results"]]
        assert names == ["sre-2"]
    both = client.get(TRACES, {"view": view_id, "model": "gpt-4o"})
    assert both.status_code == 400 and "view" in both.json()["fields"]
    assert client.get(TRACES, {"view": "nope"}).status_code == 404
    renamed = client.patch(f"{API}{view_id}/", {"name": "In adjudication"}, content_type="application/json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "In adjudication"
    changed = client.patch(f"{API}{view_id}/", {"params": {"state": "gold"}}, content_type="application/json")
    assert changed.json()["count"] == 1 and changed.json()["params"] == {"state": ["gold"]}
    assert client.delete(f"{API}{view_id}/").status_code == 204
    assert client.get(f"{API}{view_id}/").status_code == 404


def test_only_owners_and_the_creator_change_a_view(client, world, owner, adjudicator, annotator_a):
    mine = _save(world.project, adjudicator, "Adjudicator's", outcome="failure")
    theirs = _save(world.project, owner, "Owner's", outcome="success")
    client.force_login(adjudicator)
    assert (
        client.patch(f"{API}{mine.pk}/", {"name": "Mine"}, content_type="application/json").status_code == 200
    )
    assert client.delete(f"{API}{theirs.pk}/").status_code == 403
    client.force_login(annotator_a)
    assert client.post(API, {"name": "x", "params": {}}, content_type="application/json").status_code == 403
    assert client.delete(f"{API}{mine.pk}/").status_code == 403
    client.force_login(owner)
    assert client.delete(f"{API}{mine.pk}/").status_code == 204


def test_blind_holds_on_a_label_view(client, world, owner, annotator_a, viewer):
    view = _save(world.project, owner, "Gold FM-1.3", gold_mode="FM-1.3")
    content = _save(world.project, owner, "Failures", outcome="failure")
    for user in (annotator_a, viewer):
        client.force_login(user)
        listed = [v["name"] for v in client.get(API).json()]
        assert listed == ["Failures"]  # the label view is not even listed, let alone counted
        assert client.get(f"{API}{view.pk}/").status_code == 404
        assert client.get(TRACES, {"view": view.pk}).status_code == 404
        assert client.get(TRACES, {"view": content.pk}).status_code == 200
    # An owner who annotates and has not submitted sees the view held: no count, no traces.
    add_member(world.project, annotator_a, "owner")
    client.force_login(annotator_a)
    body = client.get(f"{API}{view.pk}/").json()
    assert body["count"] is None and "blind" in body["held"]
    assert client.get(TRACES, {"view": view.pk}).status_code == 403
    Assignment.objects.filter(annotator=annotator_a).update(status=Assignment.Status.SUBMITTED)
    client.force_login(annotator_a)
    assert client.get(f"{API}{view.pk}/").json()["count"] == 1


def test_the_page_saves_lists_renames_and_deletes(client, world, owner):
    client.force_login(owner)
    page = client.get(PAGE)
    assert "No saved views yet" in page.content.decode()
    saved = client.post(
        "/p/demo-project/views/",
        {"name": "Test split", "query": "meta=split%3Atest"},
        headers={"HX-Request": "true"},
    )
    assert saved.status_code == 200 and "Test split" in saved.content.decode()
    view = SavedView.objects.get(name="Test split")
    assert view.params == [["meta", "split:test"]]
    page = client.get(PAGE).content.decode()
    assert f'href="/p/demo-project/views/{view.pk}/"' in page
    opened = client.get(f"/p/demo-project/views/{view.pk}/")
    assert opened.status_code == 302 and opened["Location"] == f"{PAGE}?meta=split%3Atest"
    dup = client.post(
        "/p/demo-project/views/", {"name": "TEST SPLIT", "query": ""}, headers={"HX-Request": "true"}
    )
    assert dup.status_code == 400 and "already a view" in dup.content.decode()
    bad = client.post(
        "/p/demo-project/views/", {"name": "Bad", "query": "score_min=abc"}, headers={"HX-Request": "true"}
    )
    assert bad.status_code == 400 and "score_min" in bad.content.decode()
    renamed = client.post(
        f"/p/demo-project/views/{view.pk}/rename/", {"name": "Test"}, headers={"HX-Request": "true"}
    )
    assert renamed.status_code == 200 and "Renamed" in renamed.content.decode()
    gone = client.post(f"/p/demo-project/views/{view.pk}/delete/")
    assert gone.status_code == 302 and not SavedView.objects.exists()


def test_cli_saves_and_applies_a_view(world):
    out, err = StringIO(), StringIO()
    call_command(
        "traces", "demo-project", "--outcome", "failure", "--save-view", "Failures", stdout=out, stderr=err
    )
    assert "Saved the view 'Failures'" in err.getvalue() and "2 trace(s)" in out.getvalue()
    out = StringIO()
    call_command("traces", "demo-project", "--view", "Failures", stdout=out)
    assert "2 trace(s)" in out.getvalue()
    with pytest.raises(CommandError, match="--save-view: There is already"):
        call_command(
            "traces", "demo-project", "--save-view", "failures", stdout=StringIO(), stderr=StringIO()
        )
    with pytest.raises(CommandError, match="--view"):
        call_command("traces", "demo-project", "--view", "nothing", stdout=StringIO())


def test_view_traces_equal_the_same_filters_typed(world, owner):
    view = _save(world.project, owner, "kubectl", q="kubectl")
    access = ProjectAccess.of(owner, world.project)
    typed = filtered_traces(access, TraceFilter(q="kubectl"))
    found = view_traces(access, view)
    assert [t.pk for t in found[0:10]] == [t.pk for t in typed[0:10]] and found.count() == typed.count() == 2


def test_the_trace_list_downloads_as_csv_by_filters_or_view(client, world, owner, annotator_a):
    view = _save(world.project, owner, "Failures", outcome="failure")
    client.force_login(owner)
    by_view = client.get(f"/p/demo-project/traces/csv/?view={view.pk}")
    assert by_view.status_code == 200 and by_view["Content-Type"].startswith("text/csv")
    assert 'filename="demo-project-Failures.csv"' in by_view["Content-Disposition"]
    lines = b"".join(by_view.streaming_content).decode().splitlines()
    assert lines[0].startswith("id,external_id,batch") and sorted(
        line.split(",")[1] for line in lines[1:]
    ) == [
        "sre-1",
        "web-2",
    ]
    by_filters = b"".join(client.get("/p/demo-project/traces/csv/?outcome=failure").streaming_content)
    assert by_filters.decode().splitlines() == lines
    assert client.get("/p/demo-project/traces/csv/?outcome=maybe").status_code == 400
    out = StringIO()
    call_command("traces", "demo-project", "--view", "Failures", "--csv", stdout=out)
    assert out.getvalue().splitlines() == lines
    client.force_login(annotator_a)
    assert client.get(f"/p/demo-project/traces/csv/?view={view.pk}").status_code == 403  # the list's roles


def test_the_demo_seeds_one_saved_view(db, tmp_path):
    from annotator.services.demo import do_seed_demo

    do_seed_demo(n_traces=4, work_dir=tmp_path)
    view = SavedView.objects.get(name="Disputed traces")
    assert view.params == [["state", "in_adjudication"]]
