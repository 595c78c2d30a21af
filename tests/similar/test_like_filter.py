"""`like=TRACE_ID` on the trace list (API, page, CSV, CLI, saved views): the planted near-duplicates first,
combined with the other filters, and a clear 400 for a trace that cannot be ranked by."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from annotator.models import SavedView, TraceRepresentation, TraceVector
from annotator.search.filters import FilterError, parse
from tests.factories import BatchFactory, ProjectFactory, trace_with_steps
from tests.similar.conftest import build, client_for

URL = "/api/projects/demo-project/traces/"


def test_a_traces_nearest_neighbours_are_its_planted_near_duplicates(project, planted, owner):
    built = build(project)
    assert built.status == "succeeded" and built.method == "tfidf"
    assert built.traces_done == len(planted.all)
    body = client_for(owner).get(URL, {"like": planted.target.pk, "page_size": 5}).json()
    ids = [row["id"] for row in body["results"]]
    assert ids[:3] == [twin.pk for twin in planted.twins]  # the fewer words changed, the closer
    scores = [row["similarity"] for row in body["results"]]
    assert scores == sorted(scores, reverse=True) and scores[2] > scores[3] + 0.2
    assert body["count"] == len(planted.all) - 1  # every other trace, ranked; not the trace itself


def test_like_ranks_what_the_other_filters_leave(project, planted, owner):
    build(project)
    client = client_for(owner)
    body = client.get(URL, {"like": planted.target.pk, "outcome": "failure", "page_size": 2}).json()
    failures = [t for t in planted.all[1:] if t.outcome == "failure"]
    assert body["count"] == len(failures)
    assert [row["id"] for row in body["results"]] == [planted.twins[0].pk, planted.twins[2].pk]
    # With q too: only the traces with a matching step, still in similarity order.
    body = client.get(URL, {"like": planted.target.pk, "q": "grafana"}).json()
    assert [row["id"] for row in body["results"]] == [twin.pk for twin in planted.twins]
    # An explicit ordering sorts the same traces by that column instead (and says nothing of similarity).
    body = client.get(URL, {"like": planted.target.pk, "model": "gpt-4o", "ordering": "-external_id"}).json()
    assert [row["external_id"] for row in body["results"]] == ["twin-2", "twin-1"]
    assert {row["similarity"] for row in body["results"]} == {None}


def test_an_unknown_or_unranked_trace_is_a_clear_400(project, planted, owner, mast):
    client = client_for(owner)
    answer = client.get(URL, {"like": planted.target.pk})
    assert (
        answer.status_code == 400
        and "not computed for this project yet" in answer.json()["fields"]["like"][0]
    )
    build(project)
    foreign = trace_with_steps(3, batch=BatchFactory(name="elsewhere"))
    ProjectFactory(taxonomy_version=mast).batches.add(foreign.batch)
    for missing in (foreign.pk, 987654321):
        answer = client.get(URL, {"like": missing})
        assert answer.status_code == 400
        assert answer.json()["fields"]["like"] == [f"no trace {missing} in this project"]
    late = trace_with_steps(3, batch=planted.target.batch)  # joined the project, not yet represented
    answer = client.get(URL, {"like": late.pk})
    assert answer.status_code == 400 and "has no representation yet" in answer.json()["fields"]["like"][0]
    assert client.get(URL, {"like": "twin-1"}).json()["fields"]["like"] == [
        "'twin-1' is not a trace id (a whole number, as in the trace list)"
    ]


def test_the_filter_language_reads_and_writes_like():
    flt = parse({"like": "42", "outcome": "failure"})
    assert flt.like == 42 and flt.active and flt.order_key == ("similarity", True)
    assert parse(dict(flt.to_params())) == flt
    assert parse({"like": "42", "ordering": "score"}).order_key == ("score", False)
    for bad in ("0", "-3", "4.5", "x"):
        try:
            parse({"like": bad})
        except FilterError as error:
            assert error.param == "like"
        else:
            raise AssertionError(f"like={bad} was accepted")


def test_the_page_csv_cli_and_saved_views_take_like(project, planted, owner):
    build(project)
    client = client_for(owner)
    page = client.get(f"/p/{project.slug}/traces/", {"like": planted.target.pk})
    text = page.content.decode()
    assert page.status_code == 200 and f"most similar to trace {planted.target.pk} first" in text
    assert text.index("twin-1") < text.index("twin-3") < text.index("noise-0")
    csv = b"".join(
        client.get(
            f"/p/{project.slug}/traces/csv/", {"like": planted.target.pk, "outcome": "failure"}
        ).streaming_content
    ).decode()
    assert csv.count("\n") == 1 + sum(t.outcome == "failure" for t in planted.all[1:])
    out = StringIO()
    call_command(
        "traces", project.slug, "--like", str(planted.target.pk), "--page-size", "3", "--json", stdout=out
    )
    api = client.get(URL, {"like": planted.target.pk, "page_size": 3}).json()
    cli = json.loads(out.getvalue())
    assert (
        [r["id"] for r in cli["results"]]
        == [r["id"] for r in api["results"]]
        == [t.pk for t in planted.twins]
    )
    saved = client.post(
        "/api/projects/demo-project/views/",
        {"name": "Like the target", "params": {"like": str(planted.target.pk)}},
        content_type="application/json",
    )
    assert saved.status_code == 201 and saved.json()["count"] == len(planted.all) - 1
    view = SavedView.objects.get(name="Like the target")
    body = client.get(URL, {"view": view.pk, "page_size": 3}).json()
    assert [r["id"] for r in body["results"]] == [t.pk for t in planted.twins]


def test_a_rebuild_replaces_the_older_vectors(project, planted):
    first = build(project)
    second = build(project)
    assert (first.version, second.version) == (1, 2)
    assert set(TraceVector.objects.filter(project=project).values_list("version", flat=True)) == {2}
    assert TraceRepresentation.objects.get(pk=first.pk).status == "succeeded"


def test_the_walk_over_the_ranking_lists_what_reading_every_id_lists(project, planted, owner, monkeypatch):
    """Large lists walk the ranking best first; small ones read every id: the same list either way, pages
    included, and a trace not yet represented comes after the ranked ones (similarity null)."""
    from annotator.similar import ranking

    build(project)
    late = trace_with_steps(3, batch=planted.target.batch, outcome="failure")
    client = client_for(owner)

    def listing(**params):
        pages, page = [], 1
        while True:
            body = client.get(URL, {"like": planted.target.pk, "page_size": 4, "page": page, **params}).json()
            pages += [(row["id"], row["similarity"]) for row in body["results"]]
            if not body["next"]:
                return pages
            page += 1

    for params in ({}, {"outcome": "failure"}, {"model": "claude"}):
        read_all = listing(**params)
        monkeypatch.setattr(ranking, "READ_ALL_BELOW", 0)
        walked = listing(**params)
        monkeypatch.setattr(ranking, "READ_ALL_BELOW", 5_000)
        assert walked == read_all and len({pk for pk, _ in walked}) == len(walked)
        if params.get("model") != "claude":
            assert walked[-1] == (late.pk, None)
            assert all(score is not None for _, score in walked[:-1])
