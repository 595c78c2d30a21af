"""Every page a user opens for one trace costs the same number of queries whatever the trace's length and
however many labels its annotations carry: the labelling page, the step viewer's partial (paging, filters,
search, a jump to a step, one step in full), the review page and its partial, the adjudication page and its
partial, and the trace's discussion and proposals. A 10-step trace with one label per annotator and a
2,000-step trace with ten are compared URL by URL (bench/bench_viewer.py times them)."""

from __future__ import annotations

import difflib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.models import Assignment
from annotator.services.adjudication import do_check_trace
from annotator.services.annotations import do_save_draft
from annotator.services.assignment import do_assign
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput
from tests.factories import BatchFactory, trace_with_steps
from tests.labels import submit

MAST = (
    [f"FM-1.{i}" for i in range(1, 6)] + [f"FM-2.{i}" for i in range(1, 7)] + ["FM-3.1", "FM-3.2", "FM-3.3"]
)
# Far above what any of these pages needs today; the real check is "the same for both traces".
CEILING = 30


def labelled_trace(project, annotator_a, annotator_b, *, n_steps: int, n_labels: int):
    """A trace both annotators labelled differently (so it has an adjudication item), with `n_labels`
    labels each, every label pointing at two steps; and a second one that A has only drafted."""
    batch = BatchFactory(name=f"run-{n_steps}")
    project.batches.add(batch)
    done = trace_with_steps(n_steps, batch=batch)
    drafted = trace_with_steps(n_steps, batch=batch)
    do_assign(project)
    last = n_steps - 1
    submit(project, done, annotator_a, {code: [i % n_steps, last] for i, code in enumerate(MAST[:n_labels])})
    submit(project, done, annotator_b, {code: [last - i, 1] for i, code in enumerate(MAST[-n_labels:])})
    item = do_check_trace(project.pk, done.pk)
    slot = Assignment.objects.get(project=project, trace=drafted, annotator=annotator_a)
    slot.project = project
    labels = tuple(
        LabelInput(code, evidence=(Evidence(i), Evidence(last))) for i, code in enumerate(MAST[:n_labels])
    )
    do_save_draft(slot, AnnotationPayload(labels=labels), actor=annotator_a, base_version=0)
    return done, drafted, slot, item


def urls(project, done, drafted, slot, item, n_steps: int) -> dict[str, tuple[str, str]]:
    """Page name -> (persona, URL)."""
    p = f"/p/{project.slug}"
    jump = n_steps - 3
    return {
        "labelling page": ("annotator_a", f"{p}/a/{slot.pk}/"),
        "labelling page, deep link": ("annotator_a", f"{p}/a/{slot.pk}/?step={jump}"),
        "labelling page, filtered": ("annotator_a", f"{p}/a/{slot.pk}/?kind=message&agent=coder"),
        "labelling page, search": ("annotator_a", f"{p}/a/{slot.pk}/?q=step+5"),
        "steps, page 2": ("annotator_a", f"{p}/t/{drafted.pk}/steps/?page=2"),
        "steps, filter by kind": ("annotator_a", f"{p}/t/{drafted.pk}/steps/?kind=message"),
        "steps, filter by agent": ("annotator_a", f"{p}/t/{drafted.pk}/steps/?agent=planner&page=2"),
        "steps, search": ("annotator_a", f"{p}/t/{drafted.pk}/steps/?q=step+7"),
        "steps, jump": ("annotator_a", f"{p}/t/{drafted.pk}/steps/?step={jump}"),
        "one step in full": ("annotator_a", f"{p}/t/{drafted.pk}/steps/{jump}/"),
        "review page": ("owner", f"{p}/t/{done.pk}/review/"),
        "review page, deep link": ("owner", f"{p}/t/{done.pk}/review/?step={jump}"),
        "review steps, page 2": ("owner", f"{p}/t/{done.pk}/review/steps/?page=2"),
        "review steps, search": ("owner", f"{p}/t/{done.pk}/review/steps/?q=step+9&kind=message"),
        "adjudication page": ("adjudicator", f"{p}/adjudication/{item.pk}/"),
        "adjudication page, deep link": ("adjudicator", f"{p}/adjudication/{item.pk}/?step={jump}"),
        "adjudication steps, page 2": ("adjudicator", f"{p}/adjudication/{item.pk}/steps/?page=2"),
        "adjudication steps, search": ("adjudicator", f"{p}/adjudication/{item.pk}/steps/?q=step+3"),
        "discussion": ("owner", f"{p}/t/{done.pk}/discussion/"),
        "proposals": ("owner", f"{p}/t/{done.pk}/proposals/"),
    }


def _diff(small: list[str], large: list[str]) -> list[str]:
    """The queries one page ran and the other did not (cut short), for the failure message."""
    lines = difflib.unified_diff([q[:160] for q in small], [q[:160] for q in large], lineterm="", n=0)
    return [line for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def counts(client, request, pages: dict[str, tuple[str, str]]) -> dict[str, list[str]]:
    """Page name -> the SQL it ran."""
    found = {}
    for name, (persona, url) in pages.items():
        client.force_login(request.getfixturevalue(persona))
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, HTTP_HX_REQUEST="true" if "/steps/" in url else None)
        assert response.status_code == 200, (name, url, response.status_code)
        found[name] = [query["sql"] for query in queries.captured_queries]
    return found


@pytest.mark.parametrize("header", [False, True], ids=["plain", "htmx"])
def test_every_page_of_a_trace_costs_the_same_queries_for_10_and_2000_steps(
    client, request, project, annotator_a, annotator_b, adjudicator, owner, header
):
    small = labelled_trace(project, annotator_a, annotator_b, n_steps=10, n_labels=1)
    large = labelled_trace(project, annotator_a, annotator_b, n_steps=2_000, n_labels=10)
    if header:
        client.defaults["HTTP_HX_CURRENT_URL"] = f"http://testserver/p/{project.slug}/"
    # A first visit may fill a cache (one query more, once per process or trace): every page of both traces
    # is visited once before the counted visit.
    counts(client, request, urls(project, *small, n_steps=10))
    counts(client, request, urls(project, *large, n_steps=2_000))
    small_sql = counts(client, request, urls(project, *small, n_steps=10))
    large_sql = counts(client, request, urls(project, *large, n_steps=2_000))
    grown = {
        name: (len(sql), len(large_sql[name]), _diff(sql, large_sql[name]))
        for name, sql in small_sql.items()
        if len(sql) != len(large_sql[name])
    }
    assert not grown, grown
    assert max(len(sql) for sql in small_sql.values()) <= CEILING
