"""Proposed modes over the API and `manage.py proposals`: recorded on a trace with the page's rules, listed
in the page's groups (annotators their own, nobody what they are blind on), settled by owners; the page, the
API and the command show the same groups."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotator.models import Assignment, ModeProposal
from annotator.services.proposals import do_propose
from tests.factories import UserFactory, add_member, api_token
from tests.labels import project_trace, submit

LOOP = "Keeps calling the same tool with identical arguments"
LOOP_TOO = "Identical tool calls with the same arguments, again and again"
GIVE_UP = "Stops early and claims the task is impossible"


def _as(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


def _propose(project, trace, user, text: str, name: str = "", steps=()) -> ModeProposal:
    project.user_roles = frozenset()  # the service asks the roles the request loaded; an assigned annotator
    return do_propose(project, trace, user, text=text, suggested_name=name, steps=steps)


@pytest.fixture
def proposed(project, annotator_a, annotator_b):
    """A labelled FM-1.3 on t1 and proposed a tool loop; B proposed the loop again on t1 and giving up on t2."""
    t1, t2 = project_trace(project, n_steps=8), project_trace(project)
    submit(project, t1, annotator_a, {"FM-1.3": [2]})
    submit(project, t1, annotator_b, {"FM-1.3": [3], "FM-2.1": [4]})
    submit(project, t2, annotator_b, {"FM-3.1": [1]})
    loop = _propose(project, t1, annotator_a, LOOP, "tool loop", [2, 5])
    again = _propose(project, t1, annotator_b, LOOP_TOO)
    give_up = _propose(project, t2, annotator_b, GIVE_UP, "premature surrender")
    return {"t1": t1, "t2": t2, "loop": loop, "again": again, "give_up": give_up}


def _ids(body: dict) -> list[list[int]]:
    return [[p["id"] for p in group["proposals"]] for group in body["groups"]]


def test_an_annotator_records_a_proposal_over_the_api_with_the_pages_rules(
    project, annotator_a, annotator_b, outsider
):
    trace = project_trace(project, n_steps=8)
    submit(project, trace, annotator_a, {"FM-1.3": [2]})
    url = f"/api/projects/{project.slug}/traces/{trace.pk}/proposals/"
    ana = _as(annotator_a)
    made = ana.post(
        url, {"text": f"  {LOOP} ", "suggested_name": "tool loop", "steps": [5, 2]}, format="json"
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["text"], body["steps"], body["cooccurring"]) == (LOOP, [2, 5], ["FM-1.3"])
    assert (body["author"], body["status"], body["mode"]) == ("ana-annotator", "open", None)
    bad = ana.post(url, {"text": "x", "steps": [42]}, format="json")
    assert bad.status_code == 400
    assert "not a step of this trace (steps #0 to #7)" in bad.json()["detail"]
    blank = ana.post(url, {"text": "   "}, format="json")
    assert blank.status_code == 400 and blank.json()["errors"] == ["Describe the failure the taxonomy lacks"]
    too_long = ana.post(url, {"text": "x" * 2001}, format="json")
    assert too_long.status_code == 400 and "at most 2,000 characters" in too_long.json()["detail"]
    assert ana.get(url).json()[0]["id"] == body["id"]

    # Ben is not assigned this trace: it does not exist for him. Outsiders and viewers get nothing.
    assert _as(annotator_b).post(url, {"text": LOOP}, format="json").status_code == 404
    assert _as(outsider).get(url).status_code == 404
    viewer = UserFactory(username="vera-viewer")
    add_member(project, viewer, "viewer")
    assert _as(viewer).post(url, {"text": LOOP}, format="json").status_code == 403
    assert ModeProposal.objects.count() == 1


def test_owners_and_adjudicators_list_groups_annotators_their_own(
    project, owner, adjudicator, annotator_a, outsider, proposed
):
    url = f"/api/projects/{project.slug}/proposals/"
    body = _as(owner).get(url).json()
    loop, again, give_up = proposed["loop"].pk, proposed["again"].pk, proposed["give_up"].pk
    assert (body["status"], body["count"], _ids(body)) == ("open", 3, [[loop, again], [give_up]])
    first = body["groups"][0]
    assert first["status"] == "open" and first["names"] == ["tool loop"]
    assert first["cooccurring"] == [{"code": "FM-1.3", "count": 2}, {"code": "FM-2.1", "count": 1}]
    assert {"tool", "identical", "argument"} <= set(first["terms"])
    assert first["proposals"][0]["steps"] == [2, 5]
    assert _ids(_as(adjudicator).get(url).json()) == _ids(body)

    mine = _as(annotator_a).get(url).json()
    assert _ids(mine) == [[loop]] and LOOP_TOO not in json.dumps(mine)
    assert _as(owner).get(f"{url}?status=declined").json() == {"status": "declined", "count": 0, "groups": []}
    refused = _as(owner).get(f"{url}?status=maybe")
    assert (
        refused.status_code == 400
        and "choose one of open, accepted, declined, all" in refused.json()["detail"]
    )
    assert _as(outsider).get(url).status_code == 404
    viewer = UserFactory(username="vera-viewer")
    add_member(project, viewer, "viewer")
    assert _as(viewer).get(url).status_code == 403


def test_an_owner_still_annotating_a_trace_sees_and_settles_no_proposal_on_it(project, proposed):
    otto = UserFactory(username="otto-owner-annotator")
    add_member(project, otto, "owner")
    add_member(project, otto, "annotator")
    Assignment.objects.create(project=project, trace=proposed["t1"], annotator=otto)
    client = _as(otto)
    body = client.get(f"/api/projects/{project.slug}/proposals/").json()
    assert _ids(body) == [[proposed["give_up"].pk]] and LOOP not in json.dumps(body)
    hidden = proposed["loop"].pk
    refused = client.post(
        f"/api/projects/{project.slug}/proposals/settle/",
        {"proposals": [hidden], "status": "declined", "outcome": "dup"},
        format="json",
    )
    assert refused.status_code == 400 and refused.json()["detail"] == f"No proposal {hidden} in this project"
    assert ModeProposal.objects.get(pk=hidden).status == "open"


def test_owners_settle_proposals_all_or_nothing_and_others_may_not(
    project, owner, adjudicator, annotator_a, proposed
):
    url = f"/api/projects/{project.slug}/proposals/settle/"
    loop, again, give_up = proposed["loop"].pk, proposed["again"].pk, proposed["give_up"].pk
    accept = {"proposals": [loop, again], "status": "accepted", "outcome": "FM-2.7"}
    for user in (adjudicator, annotator_a):
        assert _as(user).post(url, accept, format="json").status_code == 403
    unknown = _as(owner).post(url, {**accept, "proposals": [loop, 999_999]}, format="json")
    assert unknown.status_code == 400 and unknown.json()["detail"] == "No proposal 999999 in this project"
    no_reason = _as(owner).post(url, {**accept, "outcome": " "}, format="json")
    assert no_reason.status_code == 400 and "which mode it became" in no_reason.json()["detail"]
    assert set(ModeProposal.objects.values_list("status", flat=True)) == {"open"}

    done = _as(owner).post(url, accept, format="json")
    assert done.status_code == 200
    assert done.json()["settled"] == 2
    assert [(p["id"], p["status"], p["outcome"]) for p in done.json()["proposals"]] == [
        (loop, "accepted", "FM-2.7"),
        (again, "accepted", "FM-2.7"),
    ]
    declined = {"proposals": [give_up], "status": "declined", "outcome": "FM-3.3 covers it"}
    assert _as(owner).post(url, declined, format="json").json()["proposals"][0]["status"] == "declined"
    listing = _as(owner).get(f"/api/projects/{project.slug}/proposals/?status=all").json()
    assert [g["status"] for g in listing["groups"]] == ["accepted", "declined"]
    assert _as(owner).get(f"/api/projects/{project.slug}/proposals/").json()["groups"] == []

    # Once a taxonomy migration turned a proposal into a mode, settling it again is refused.
    ModeProposal.objects.filter(pk=loop).update(mode=project.taxonomy_version.modes.get(code="FM-1.3"))
    relabel = _as(owner).post(url, {**declined, "proposals": [loop]}, format="json")
    assert relabel.status_code == 400 and "already turned proposal" in relabel.json()["detail"]


def test_the_command_lists_groups_and_settles(project, proposed):
    out = io.StringIO()
    call_command("proposals", project.slug, "list", stdout=out)
    text = out.getvalue()
    loop, give_up = proposed["loop"], proposed["give_up"]
    assert "Group 1, 2 proposals: " in text and "Group 2, 1 proposal: " in text
    assert "suggested names: tool loop" in text and "co-occurs with: FM-1.3 x2, FM-2.1 x1" in text
    assert f"#{loop.pk}\topen\tana-annotator on trace {loop.trace.external_id} (steps 2, 5): {LOOP}" in text

    out = io.StringIO()
    call_command(
        "proposals", project.slug, "decline", str(give_up.pk), "--reason", "FM-3.3 covers it", stdout=out
    )
    assert out.getvalue().strip() == "1 proposal declined"
    out = io.StringIO()
    call_command(
        "proposals",
        project.slug,
        "accept",
        str(loop.pk),
        str(proposed["again"].pk),
        "--mode",
        "FM-2.7",
        stdout=out,
    )
    assert out.getvalue().strip() == "2 proposals turned into FM-2.7"
    out = io.StringIO()
    call_command("proposals", project.slug, "list", stdout=out)
    assert out.getvalue().strip() == "No open proposals."
    out = io.StringIO()
    call_command("proposals", project.slug, "list", "--status", "declined", "--json", stdout=out)
    body = json.loads(out.getvalue())
    assert (body["status"], body["count"], _ids(body)) == ("declined", 1, [[give_up.pk]])
    assert body["groups"][0]["proposals"][0]["outcome"] == "FM-3.3 covers it"

    with pytest.raises(CommandError, match="No proposal 999999 in this project"):
        call_command("proposals", project.slug, "decline", "999999", "--reason", "x")
    with pytest.raises(CommandError, match="No project 'nope'"):
        call_command("proposals", "nope", "list")


def test_the_commands_help_explains_it(capsys):
    with pytest.raises(SystemExit):
        call_command("proposals", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "failures the taxonomy lacks" in text and "grouped by the words they use" in text
    assert "{list,accept,decline}" in text


def test_the_page_the_api_and_the_command_show_the_same_groups(client, project, owner, annotator_b, proposed):
    # A fourth proposal chained to the loop by its words, so the groups are not trivially one per proposal.
    _propose(
        project, proposed["t2"], annotator_b, "Same tool, same arguments, repeated calls", "repeat calls"
    )
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/proposals/")
    from_page = [[p.pk for p in items] for _, items in page.context["groups"]]
    api_body = _as(owner).get(f"/api/projects/{project.slug}/proposals/").json()
    out = io.StringIO()
    call_command("proposals", project.slug, "list", "--json", stdout=out)
    cli_body = json.loads(out.getvalue())
    assert from_page == _ids(api_body) == _ids(cli_body)
    assert len(from_page) == 2 and len(from_page[0]) == 3
    assert cli_body == api_body


def test_the_list_costs_the_same_queries_for_more_proposals(project, owner, annotator_b, proposed):
    client = _as(owner)
    url = f"/api/projects/{project.slug}/proposals/"
    client.get(url)  # the token's first use is recorded once

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    before = queries()
    for n in range(4):
        _propose(project, proposed["t2"], annotator_b, f"Another new failure number {n}", f"name {n}")
    assert queries() == before
