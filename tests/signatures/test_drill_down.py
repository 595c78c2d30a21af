"""A cell of the signatures' tables opens the traces behind it: the benign-or-fatal table's counts of failed
and successful traces with a mode open the trace list filtered to them (sig_mode, sig_source, outcome)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotator.search.filters import FilterError, parse
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit

pytestmark = pytest.mark.django_db
CELL = re.compile(r'<a data-drill="signature" href="([^"]+)"[^>]*>(\d+)</a>')
LIST_COUNT = re.compile(r'id="trace-count"><strong>([\d,]+)</strong>')


@pytest.fixture
def labelled(project, annotator_a):
    """Five traces: FM-1.1 on two failed traces and one successful one; FM-2.1 on one failed trace."""
    plan = [
        ("failure", {"FM-1.1": [1]}),
        ("failure", {"FM-1.1": [1], "FM-2.1": [2]}),
        ("failure", {}),
        ("success", {"FM-1.1": [1]}),
        ("success", {}),
    ]
    for outcome, labels in plan:
        submit(project, project_trace(project, outcome=outcome), annotator_a, labels)
    return project


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_each_count_opens_as_many_traces_as_it_says(labelled, owner):
    client = _client(owner)
    page = client.get(f"/p/{labelled.slug}/signatures/?source=union").content.decode()
    cells = [(href.replace("&amp;", "&"), int(n)) for href, n in CELL.findall(page)]
    shown = {
        (re.search(r"sig_mode=([^&]+)", h).group(1), re.search(r"outcome=(\w+)", h).group(1)): n
        for h, n in cells
    }
    assert shown[("FM-1.1", "failure")] == 2 and shown[("FM-1.1", "success")] == 1
    assert shown[("FM-2.1", "failure")] == 1
    for href, n in cells:
        response = client.get(href)
        assert response.status_code == 200, href
        assert int(LIST_COUNT.search(response.content.decode()).group(1)) == n, href


def test_the_gold_source_counts_only_gold_traces(labelled, owner):
    response = _client(owner).get(f"/p/{labelled.slug}/traces/?sig_mode=FM-1.1")
    assert int(LIST_COUNT.search(response.content.decode()).group(1)) == 0  # nothing adjudicated yet


def test_a_viewer_sees_the_figures_but_their_cells_open_nothing(labelled):
    viewer = UserFactory(username="vic-viewer")
    add_member(labelled, viewer, "viewer")
    page = _client(viewer).get(f"/p/{labelled.slug}/signatures/?source=union").content.decode()
    assert "FM-1.1" in page and not CELL.findall(page)


def test_the_signature_filter_is_held_back_from_annotators(labelled, annotator_a):
    response = _client(annotator_a).get(f"/p/{labelled.slug}/traces/?sig_mode=FM-1.1&sig_source=union")
    assert response.status_code == 403


def test_a_bad_source_or_mode_is_named(labelled, owner):
    client = _client(owner)
    response = client.get(f"/p/{labelled.slug}/traces/?sig_mode=FM-1.1&sig_source=nonsense")
    assert response.status_code == 400 and "sig_source" in response.content.decode()
    response = client.get(f"/p/{labelled.slug}/traces/?sig_mode=FM-99&sig_source=union")
    assert response.status_code == 400 and "sig_mode" in response.content.decode()
    with pytest.raises(FilterError):
        parse({"sig_source": "union"})


def test_a_prevalence_cell_opens_the_traces_of_its_column(project, annotator_a, owner):
    plan = [
        ("gpt-4o", {"FM-1.1": [1]}),
        ("gpt-4o", {"FM-1.1": [1]}),
        ("gpt-4o", {}),
        ("claude", {"FM-1.1": [1]}),
    ]
    for model, labels in plan:
        submit(project, project_trace(project, model=model, outcome="failure"), annotator_a, labels)
    client = _client(owner)
    page = client.get(f"/p/{project.slug}/signatures/?source=union").content.decode()
    cells = re.findall(r'<a data-drill="signature-cell" data-count="(\d+)" href="([^"]+)"', page)
    by_model = {re.search(r"model=([^&]+)", href).group(1): int(n) for n, href in cells if "FM-1.1" in href}
    assert by_model == {"gpt-4o": 2, "claude": 1}
    for n, href in cells:
        response = client.get(href.replace("&amp;", "&"))
        assert int(LIST_COUNT.search(response.content.decode()).group(1)) == int(n), href
