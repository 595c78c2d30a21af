"""The project's trace list page: a filter form whose URL is a bookmark, sortable headers, the count,
search snippets (escaped, hits marked), an htmx partial per swap, errors shown in the page."""

from __future__ import annotations

import pytest

from tests.factories import BatchFactory, TraceFactory

PAGE = "/p/demo-project/traces/"


@pytest.fixture
def owner_client(client, owner, world):
    client.force_login(owner)
    return client


def test_filtered_page_counts_and_keeps_the_filter_in_the_form(owner_client):
    response = owner_client.get(f"{PAGE}?model=gpt-4o&outcome=failure")
    text = response.content.decode()
    assert response.status_code == 200
    assert "<strong>2</strong> traces match" in text
    assert 'name="model" value="gpt-4o"' in text
    assert "<option selected>failure</option>" in text
    assert "sre-1" in text and "web-2" in text and "sre-2" not in text


def test_search_snippets_are_escaped_with_hits_marked_and_link_to_the_step(owner_client, world):
    text = owner_client.get(f"{PAGE}?q=kubectl").content.decode()
    assert '&lt;b&gt;<mark class="hit">kubectl</mark>&lt;/b&gt;' in text
    assert "<b>kubectl" not in text
    assert f"/p/demo-project/t/{world.gold.pk}/review/?step=3&amp;q=kubectl#step-3" in text


def test_column_headers_sort_and_flip(owner_client):
    text = owner_client.get(f"{PAGE}?model=gpt-4o&ordering=score").content.decode()
    assert 'aria-sort="ascending"' in text
    assert 'href="?model=gpt-4o&amp;ordering=-score"' in text  # a second click sorts descending
    rows = [name for name in ("sre-1", "web-2", "web-1") if name in text]
    assert sorted(rows, key=text.index) == ["sre-1", "web-2", "web-1"]


def test_pager_links_keep_the_filter(owner_client, world):
    batch = BatchFactory(name="many")
    world.project.batches.add(batch)
    TraceFactory.create_batch(55, batch=batch, model="gpt-4o")
    text = owner_client.get(f"{PAGE}?model=gpt-4o").content.decode()
    assert "Page 1 of 2" in text
    assert 'href="?model=gpt-4o&amp;page=2"' in text


def test_htmx_gets_only_the_results_partial(owner_client):
    response = owner_client.get(f"{PAGE}?benchmark=web&model=&q=", headers={"HX-Request": "true"})
    text = response.content.decode()
    assert response.status_code == 200
    assert '<section id="trace-results"' in text
    assert "<html" not in text and 'id="trace-filter"' not in text
    assert response["HX-Push-Url"] == f"{PAGE}?benchmark=web"


def test_a_bad_parameter_is_shown_beside_the_results(owner_client):
    response = owner_client.get(f"{PAGE}?score_min=lots", headers={"HX-Request": "true"})
    assert response.status_code == 400  # site.js swaps a 400 fragment and focuses its alert
    text = response.content.decode()
    assert 'role="alert"' in text and "score_min" in text


def test_no_match_says_so(owner_client):
    text = owner_client.get(f"{PAGE}?q=nothingmatchesthis").content.decode()
    assert "No trace matches these filters" in text
