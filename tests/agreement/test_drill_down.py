"""Every figure opens its traces: a cell of the agreement report opens the trace list filtered to the traces
behind it, and the list counts what the cell says."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotator.models import Assignment
from annotator.search.filters import FilterError, parse
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit

pytestmark = pytest.mark.django_db
CELL = re.compile(r'<a data-drill="(\w+)" href="([^"]+)"[^>]*>([\d,.]+)</a>')
LIST_COUNT = re.compile(r'id="trace-count"><strong>([\d,]+)</strong>')


@pytest.fixture
def labelled(project, annotator_a, annotator_b):
    """Six traces both annotators submitted: they disagree on FM-1.1 twice and on FM-3.1 three times."""
    for k in range(6):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1], **({"FM-3.1": [2]} if k % 2 else {})})
        submit(project, trace, annotator_b, {"FM-1.1": [1]} if k < 4 else {})
    return project


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _cells(client: Client, project) -> list[tuple[str, str, str]]:
    page = client.get(f"/p/{project.slug}/agreement/").content.decode()
    return [(kind, href.replace("&amp;", "&"), shown) for kind, href, shown in CELL.findall(page)]


def _listed(client: Client, href: str) -> int:
    response = client.get(href)
    assert response.status_code == 200, href
    return int(LIST_COUNT.search(response.content.decode()).group(1).replace(",", ""))


def test_each_disagreement_cell_opens_as_many_traces_as_it_counts(labelled, owner):
    client = _client(owner)
    cells = _cells(client, labelled)
    counted = {
        re.search(r"disputed_mode=([^&]+)", href).group(1): int(shown)
        for kind, href, shown in cells
        if kind == "mode"
    }
    assert counted == {"FM-1.1": 2, "FM-3.1": 3}
    for kind, href, shown in cells:
        if kind == "mode":
            assert _listed(client, href) == int(shown), href


def test_a_pair_cell_opens_the_traces_both_raters_submitted(labelled, owner, annotator_a, annotator_b):
    client = _client(owner)
    pairs = [href for kind, href, _ in _cells(client, labelled) if kind == "pair"]
    assert pairs and all(
        f"pair={annotator_a.username},{annotator_b.username}" in href
        or f"pair={annotator_b.username},{annotator_a.username}" in href
        for href in pairs
    )
    assert {_listed(client, href) for href in pairs} == {6}


def test_a_third_rater_gets_a_pair_table_whose_cells_add_up(labelled, owner, annotator_a):
    carol = UserFactory(username="carol-annotator")
    add_member(labelled, carol, "annotator")
    first = Assignment.objects.filter(project=labelled, annotator=annotator_a).order_by("trace_id").first()
    submit(labelled, first.trace, carol, {"FM-3.1": [1]})
    client = _client(owner)
    cells = _cells(client, labelled)
    counts = [(href, shown) for _, href, shown in cells if "." not in shown]  # not a kappa
    assert any("carol-annotator" in href and "disputed_mode" not in href for href, _ in counts)
    assert any("carol-annotator" in href and "disputed_mode=FM-3.1" in href for href, _ in counts)
    for href, shown in counts:
        assert _listed(client, href) == int(shown.replace(",", "")), href


def test_a_viewer_sees_the_report_but_its_cells_open_nothing(labelled):
    viewer = UserFactory(username="vic-viewer")
    add_member(labelled, viewer, "viewer")
    assert _cells(_client(viewer), labelled) == []


def test_the_pair_filter_is_held_back_from_annotators_and_the_blind(
    labelled, annotator_a, annotator_b, owner
):
    url = f"/p/{labelled.slug}/traces/?pair={annotator_a.username},{annotator_b.username}"
    assert _client(annotator_a).get(url).status_code == 403
    add_member(labelled, owner, "annotator")
    Assignment.objects.create(project=labelled, trace=project_trace(labelled), annotator=owner)
    response = _client(owner).get(url)
    assert response.status_code == 403 and "blind" in response.content.decode()


def test_the_pair_parameter_names_two_raters():
    assert parse({"pair": " ana , ben "}).pair == "ana,ben"
    for bad in ("ana", "ana,ana", "ana,", "a,b,c"):
        with pytest.raises(FilterError) as caught:
            parse({"pair": bad})
        assert caught.value.param == "pair"
