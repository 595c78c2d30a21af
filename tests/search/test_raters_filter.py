"""`raters=a,b,c`: the traces at least two of those raters submitted, and with `disputed_mode` where they split
on the mode. What the agreement report's "Disagree" cells open with three raters or more; held back from the
blind like every filter on other raters' labels."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotator.models import Assignment
from annotator.search.filters import MAX_RATERS, FilterError, parse
from tests.factories import UserFactory, add_member
from tests.labels import submit

API = "/api/projects/demo-project/traces/"


@pytest.fixture
def carol(world):
    """A third annotator who rated sre-2 (FM-1.1, as ana did) and sre-1 (without FM-1.3, which a and b chose)."""
    carol = UserFactory(username="carol-annotator")
    add_member(world.project, carol, "annotator")
    submit(world.project, world.disputed, carol, {"FM-1.1": [1]})
    submit(world.project, world.gold, carol, {})
    return carol


def listed(client, query: str) -> list[str]:
    response = client.get(f"{API}?{query}")
    assert response.status_code == 200, response.content
    return sorted(row["external_id"] for row in response.json()["results"])


@pytest.fixture
def owner_client(client, owner, world):
    client.force_login(owner)
    return client


def test_raters_selects_the_traces_two_of_them_submitted_and_where_they_split(
    owner_client, annotator_a, annotator_b, carol
):
    three = f"raters={annotator_a.username},{annotator_b.username},{carol.username}"
    assert listed(owner_client, three) == ["sre-1", "sre-2"]
    assert listed(owner_client, f"{three}&disputed_mode=FM-1.1") == ["sre-2"]  # a and carol, not b
    assert listed(owner_client, f"{three}&disputed_mode=FM-1.3") == ["sre-1"]  # a and b, not carol
    assert listed(owner_client, f"{three}&disputed_mode=FM-2.2") == []  # only the model chose it
    assert listed(owner_client, f"raters={annotator_a.username},{carol.username}&disputed_mode=FM-1.1") == []


def test_two_raters_select_what_their_pair_does(owner_client, annotator_a, annotator_b, carol):
    for mode in ("", "&disputed_mode=FM-1.1", "&disputed_mode=FM-1.3"):
        for a, b in ((annotator_a, annotator_b), (annotator_a, carol)):
            assert listed(owner_client, f"raters={a.username},{b.username}{mode}") == listed(
                owner_client, f"pair={a.username},{b.username}{mode}"
            )


def test_a_raters_filter_that_cannot_be_read_is_a_400_naming_it(owner_client, annotator_a, annotator_b):
    many = ",".join(f"r{k}" for k in range(MAX_RATERS + 1))
    for query in (
        "raters=ana",
        "raters=ana,ana",
        "raters=ana,,ben",
        f"raters={many}",
        f"raters={annotator_a.username},nobody-here",
        f"raters={annotator_a.username},{annotator_b.username}&pair={annotator_a.username},{annotator_b.username}",
    ):
        response = owner_client.get(f"{API}?{query}")
        assert response.status_code == 400, query
        assert "raters" in response.json()["fields"], query


def test_the_parameter_reads_a_comma_separated_list():
    assert parse({"raters": " ana , ben ,cy "}).raters == "ana,ben,cy"
    with pytest.raises(FilterError) as caught:
        parse({"raters": ["ana,ben", "cy,dee"]})
    assert caught.value.param == "raters"


def test_raters_is_refused_to_annotators_and_to_the_blind(
    client, world, owner, annotator_a, annotator_b, carol
):
    query = (
        f"{API}?raters={annotator_a.username},{annotator_b.username},{carol.username}&disputed_mode=FM-1.1"
    )
    client.force_login(annotator_a)
    response = client.get(query)
    assert response.status_code == 403 and "raters" in response.json()["detail"]
    add_member(world.project, owner, "annotator")
    Assignment.objects.create(project=world.project, trace=world.disputed, annotator=owner)
    client.force_login(owner)
    response = client.get(query)
    assert response.status_code == 403
    assert "raters" in response.json()["detail"] and "blind" in response.json()["detail"]


def test_the_command_takes_raters_as_the_api_does(owner_client, annotator_a, annotator_b, carol):
    names = f"{annotator_a.username},{annotator_b.username},{carol.username}"
    out = StringIO()
    call_command(
        "traces", "demo-project", "--raters", names, "--disputed-mode", "FM-1.3", "--json", stdout=out
    )
    api = owner_client.get(f"{API}?raters={names}&disputed_mode=FM-1.3").json()
    assert json.loads(out.getvalue())["count"] == api["count"] == 1
