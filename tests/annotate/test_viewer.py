"""The step viewer: paging, deep links, filters, search, formatting, escaping, and constant queries."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.models import Assignment
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, TraceFactory, add_member, trace_with_steps
from tests.services import missing
from traces.models import Step
from traces.viewer import BODY_LIMIT, PAGE_SIZE, SEARCH_INDEXED_FROM, StepFilter, search_steps, step_page


def big_trace(project, n, *, name="big"):
    batch = BatchFactory(name=name)
    project.batches.add(batch)
    trace = trace_with_steps(n, batch=batch)
    do_assign(project)
    return trace


def slot(project, user, trace):
    return Assignment.objects.get(project=project, annotator=user, trace=trace)


def test_it_pages_steps_and_opens_the_page_holding_a_deep_linked_step(project):
    trace = big_trace(project, 120)
    first = step_page(trace, StepFilter())
    assert (first.number, first.num_pages, first.count) == (1, 3, 120)
    assert [s.index for s in first.steps] == list(range(PAGE_SIZE))
    linked = step_page(trace, StepFilter(), step=75)
    assert linked.number == 2 and linked.focus == 75
    assert 75 in [s.index for s in linked.steps]
    assert step_page(trace, StepFilter(), page=99).number == 3  # clamped, not an error


def test_it_filters_by_agent_and_kind(project):
    trace = big_trace(project, 10)
    Step.objects.filter(trace=trace, index__in=[3, 4]).update(kind="tool_call", tool_name="search")
    coder = step_page(trace, StepFilter(agent="coder"))
    assert {s.agent for s in coder.steps} == {"coder"} and coder.count == 5
    calls = step_page(trace, StepFilter(kind="tool_call"))
    assert [s.index for s in calls.steps] == [3, 4]
    assert ("tool_call", "Tool call") in calls.kinds and "planner" in calls.agents


def test_search_finds_content_tool_names_and_arguments(project):
    trace = big_trace(project, 130)
    Step.objects.filter(trace=trace, index=7).update(content="The API returned a NeedleError")
    Step.objects.filter(trace=trace, index=64).update(tool_name="needle_lookup")
    Step.objects.filter(trace=trace, index=101).update(tool_args={"query": "find the needle"})
    hits, total = search_steps(trace, StepFilter(q="needle"))
    assert (hits, total) == ([7, 64, 101], 3)


def test_search_in_a_long_trace_lists_hits_on_both_sides_of_the_indexed_part_in_order(project, monkeypatch):
    trace = big_trace(project, SEARCH_INDEXED_FROM + 300)
    for index in (SEARCH_INDEXED_FROM + 250, 3, SEARCH_INDEXED_FROM, SEARCH_INDEXED_FROM - 1):
        Step.objects.filter(trace=trace, index=index).update(content=f"a NeedleError at {index}")
    expected = [3, SEARCH_INDEXED_FROM - 1, SEARCH_INDEXED_FROM, SEARCH_INDEXED_FROM + 250]
    assert search_steps(trace, StepFilter(q="needle")) == (expected, 4)
    monkeypatch.setattr("traces.viewer.MAX_HITS", 2)  # the count stops at MAX_HITS + 1 across the bound too
    assert search_steps(trace, StepFilter(q="needle at")) == ([], 0)
    assert search_steps(trace, StepFilter(q="error at")) == (expected[:2], 3)


@pytest.mark.postgres
def test_only_steps_of_long_traces_carry_the_search_indexes(db):
    """Ordinary traces are imported without trigram index upkeep (issue 14); the bound is the viewer's."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'step_%%_trgm'")
        definitions = dict(cursor.fetchall())
    assert sorted(definitions) == ["step_content_trgm", "step_tool_args_trgm", "step_tool_name_trgm"]
    for definition in definitions.values():
        assert definition.endswith(f"WHERE (index >= {SEARCH_INDEXED_FROM})"), definition


def test_search_takes_percent_and_underscore_literally(project):
    trace = big_trace(project, 5)
    Step.objects.filter(trace=trace, index=1).update(content="progress 100%_done")
    Step.objects.filter(trace=trace, index=2).update(content="progress 100xydone")
    assert search_steps(trace, StepFilter(q="100%_d")) == ([1], 1)


def test_a_search_with_more_hits_than_listed_says_more_than(client, project, annotator_a, monkeypatch):
    monkeypatch.setattr("traces.viewer.MAX_HITS", 3)
    trace = big_trace(project, 8)
    client.force_login(annotator_a)
    response = client.get(f"/p/{project.slug}/t/{trace.pk}/steps/?q=step", HTTP_HX_REQUEST="true")
    assert "More than <b>3</b> hits" in response.content.decode()


def test_the_steps_partial_jumps_to_the_page_of_a_hit_and_pushes_the_page_url(client, project, annotator_a):
    trace = big_trace(project, 130)
    Step.objects.filter(trace=trace, index=101).update(content="a needle here")
    own = slot(project, annotator_a, trace)
    client.force_login(annotator_a)
    page_url = f"/p/{project.slug}/a/{own.pk}/"
    response = client.get(
        f"/p/{project.slug}/t/{trace.pk}/steps/",
        {"q": "needle"},  # no page or step: a search opens at its first hit
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"http://testserver{page_url}",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="trace-steps"')
    assert 'data-hits="[101]"' in html and "1</b> hit" in html
    assert 'id="step-101"' in html and 'id="step-0"' not in html
    assert '<mark class="hit">needle</mark>' in html
    assert response["HX-Push-Url"].startswith(page_url + "?")
    assert f'href="{page_url}?q=needle&amp;page=1"' in html  # href fallbacks point at the real page


def test_a_deep_link_opens_the_annotation_page_at_the_right_page(client, project, annotator_a):
    trace = big_trace(project, 200)
    own = slot(project, annotator_a, trace)
    client.force_login(annotator_a)
    html = client.get(f"/p/{project.slug}/a/{own.pk}/", {"step": 160}).content.decode()
    assert 'id="step-160"' in html and 'data-focus="160"' in html and 'id="step-10"' not in html


def test_it_pretty_prints_json_and_collapses_long_output(project):
    trace = big_trace(project, 3)
    Step.objects.filter(trace=trace, index=0).update(
        kind="tool_call",
        tool_name="search",
        tool_args={"q": "flights", "limit": 3},
        content='{"ok": true, "n": [1, 2]}',
    )
    Step.objects.filter(trace=trace, index=1).update(kind="tool_result", content="line\n" * 400)
    Step.objects.filter(trace=trace, index=2).update(
        content="x" * (BODY_LIMIT + 500), parent_index=1, depth=2
    )
    steps = step_page(trace, StepFilter()).steps
    assert steps[0].tool_args == {"q": "flights", "limit": 3}  # shown by shape: tests/render
    assert steps[0].is_json and steps[0].body.startswith('{\n  "ok": true')
    assert steps[1].long and steps[1].mono and not steps[1].truncated
    assert steps[2].truncated and steps[2].length == BODY_LIMIT + 500 and len(steps[2].body) == BODY_LIMIT
    assert steps[2].depth == 2


def test_a_long_step_loads_in_full_on_demand(client, project, annotator_a):
    trace = big_trace(project, 2)
    Step.objects.filter(trace=trace, index=1).update(content="y" * (BODY_LIMIT + 10) + "THE-END")
    own = slot(project, annotator_a, trace)
    client.force_login(annotator_a)
    page = client.get(f"/p/{project.slug}/a/{own.pk}/").content.decode()
    assert "THE-END" not in page and "Load the whole step" in page
    full = client.get(f"/p/{project.slug}/t/{trace.pk}/steps/1/", HTTP_HX_REQUEST="true").content.decode()
    assert full.lstrip().startswith('<article id="step-1"') and "THE-END" in full
    assert client.get(f"/p/{project.slug}/t/{trace.pk}/steps/1/").status_code == 200  # plain link works too


def test_a_script_in_a_step_is_shown_as_text(client, project, annotator_a):
    evil = '<script>alert("x")</script>'
    batch = BatchFactory(name="evil")
    project.batches.add(batch)
    trace = TraceFactory(batch=batch, task=evil, model=evil, metadata={"note": evil}, step_count=1)
    Step.objects.create(
        trace=trace,
        index=0,
        agent=evil,
        kind="tool_result",
        tool_name=evil,
        tool_args={"a": evil},
        content=evil,
    )
    do_assign(project)
    client.force_login(annotator_a)
    own = slot(project, annotator_a, trace)
    for url in (f"/p/{project.slug}/a/{own.pk}/", f"/p/{project.slug}/t/{trace.pk}/steps/?q=script"):
        html = client.get(url).content.decode()
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(" in html


def _page_counts(client, project, user, trace, own):
    counts = []
    for url in (f"/p/{project.slug}/a/{own.pk}/?step=5", f"/p/{project.slug}/t/{trace.pk}/steps/?page=1"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        counts.append(len(queries))
        _assert_no_content_outside_the_page(queries.captured_queries)
    return counts


def _assert_no_content_outside_the_page(queries):
    """Step content may only be read cut to the page (SUBSTR/LENGTH over a LIMITed page or a page-sized index
    range) or searched."""
    for query in queries:
        sql = query["sql"]
        if '"traces_step"."content"' not in sql:
            continue
        select = sql.split(" FROM ", 1)[0]
        bare = re.sub(r'(SUBSTR|SUBSTRING|LENGTH)\("traces_step"\."content"', "", select)
        assert '"traces_step"."content"' not in bare, sql
        window = re.search(r'"index" >= (\d+) AND "traces_step"\."index" < (\d+)', sql)
        bounded_range = window is not None and int(window[2]) - int(window[1]) <= 50
        assert "LIMIT" in sql or bounded_range, sql


def test_queries_do_not_grow_with_the_trace_length(
    client, project, annotator_a, django_assert_max_num_queries
):
    small = big_trace(project, 10, name="small")
    large = big_trace(project, 2_000, name="large")
    client.force_login(annotator_a)
    with django_assert_max_num_queries(40):
        small_counts = _page_counts(client, project, annotator_a, small, slot(project, annotator_a, small))
    with django_assert_max_num_queries(40):
        large_counts = _page_counts(client, project, annotator_a, large, slot(project, annotator_a, large))
    assert small_counts == large_counts
    deep = f"/p/{project.slug}/a/{slot(project, annotator_a, large).pk}/?step=1900"
    with django_assert_max_num_queries(small_counts[0]):
        client.get(deep)


@pytest.mark.parametrize("path", ["steps/", "steps/0/"])
def test_outsiders_and_unassigned_annotators_cannot_open_a_trace(client, project, outsider, path, taxonomies):
    trace = big_trace(project, 3)
    carl = add_member(project, outsider.__class__.objects.create(username="carl"), "annotator").user
    client.force_login(outsider)
    assert client.get(f"/p/{project.slug}/t/{trace.pk}/{path}").status_code == 404
    client.force_login(carl)  # an annotator with no assignment on this trace
    Assignment.objects.filter(annotator=carl).delete()
    assert client.get(f"/p/{project.slug}/t/{trace.pk}/{path}").status_code == 404
    other = trace_with_steps(2)  # a trace of no batch in this project
    client.force_login(project.memberships.get(role="owner").user)
    assert client.get(f"/p/{project.slug}/t/{other.pk}/{path}").status_code == 404


def test_a_step_shows_its_numbers_grouped_and_links_its_parent(client, project, annotator_a):
    batch = BatchFactory(name="numbers")
    project.batches.add(batch)
    trace = TraceFactory(batch=batch, step_count=2)
    Step.objects.create(trace=trace, index=0, content="plan")
    Step.objects.create(
        trace=trace, index=1, parent_index=0, depth=1, content="call", tokens=12345, duration_ms=1500
    )
    do_assign(project)
    client.force_login(annotator_a)
    page = client.get(f"/p/{project.slug}/a/{slot(project, annotator_a, trace).pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="step-1"' in html and 'data-goto-step="0"' in html and "--depth: 1" in html
    assert "12,345 tokens" in html and "1,500 ms" in html and "12,345 tok" in html
