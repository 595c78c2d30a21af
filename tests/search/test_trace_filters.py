"""Each filter of the project's trace list, as a script calls it (GET /api/projects/SLUG/traces/?...)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.factories import BatchFactory, ProjectFactory, trace_with_steps
from tests.labels import submit
from tests.services import missing
from traces.models import Step, Trace

URL = "/api/projects/demo-project/traces/"


def ids(client, query: str) -> list[str]:
    response = client.get(f"{URL}?{query}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == len(body["results"])
    return [row["external_id"] for row in body["results"]]


@pytest.fixture
def owner_client(client, owner, world):
    client.force_login(owner)
    return client


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["sre-1", "sre-2", "web-1", "web-2"]),
        ("batch=beta", ["web-1", "web-2"]),
        ("benchmark=sre", ["sre-1", "sre-2"]),
        ("model=gpt-4o", ["sre-1", "web-1", "web-2"]),
        ("system=AG2", ["sre-1", "sre-2", "web-1", "web-2"]),
        ("system=Magentic", []),
        ("outcome=failure", ["sre-1", "web-2"]),
        ("score_min=0.5", ["sre-2", "web-2"]),
        ("score_max=0.5", ["sre-1", "web-2"]),
        ("steps_min=10", ["web-2"]),
        ("steps_max=6", ["sre-1", "sre-2", "web-1"]),
        ("meta=split:test", ["sre-1"]),
        ("meta=split:test&meta=lang:fr", []),
        ("state=unassigned", ["web-1"]),
        ("state=in_progress", ["web-2"]),
        ("state=complete", ["sre-1", "sre-2"]),
        ("state=in_adjudication", ["sre-2"]),
        ("state=gold", ["sre-1"]),
        ("gold_mode=FM-1.3", ["sre-1"]),
        ("gold_mode=FM-1.1", []),
        ("human_mode=FM-1.5", ["sre-2"]),
        ("llm_mode=FM-2.2", ["web-1"]),
        ("human_mode=FM-2.2", []),
        ("disputed_mode=FM-1.1", ["sre-2"]),
        ("disputed_mode=FM-1.3", []),
        ("evidence_kind=tool_call", ["sre-1"]),
        ("evidence_tool=bash", ["sre-1"]),
        ("evidence_kind=error", []),
        ("tool=bash", ["sre-1"]),
        ("tool_args=kubectl", ["sre-1"]),
        ("tool_args=helm", []),
        ("q=kubectl", ["sre-1", "sre-2"]),
        ("q=kubectl+namespace", ["sre-1"]),
        ("model=gpt-4o&benchmark=sre&outcome=failure", ["sre-1"]),
        ("batch=alpha&state=complete&q=pods", ["sre-2"]),
        ("model=gpt-4o&state=unassigned&llm_mode=FM-2.2", ["web-1"]),
    ],
)
def test_each_filter_and_combinations(owner_client, query, expected):
    assert sorted(ids(owner_client, query)) == expected


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        ("external_id", ["sre-1", "sre-2", "web-1", "web-2"]),
        ("-external_id", ["web-2", "web-1", "sre-2", "sre-1"]),
        ("score", ["sre-1", "web-2", "sre-2", "web-1"]),  # no score last, either way
        ("-score", ["sre-2", "web-2", "sre-1", "web-1"]),
        ("-steps", ["web-2", "sre-1", "sre-2", "web-1"]),  # equal step counts: id order
        ("batch", ["sre-1", "sre-2", "web-1", "web-2"]),
    ],
)
def test_ordering_by_any_column_is_stable(owner_client, ordering, expected):
    assert ids(owner_client, f"ordering={ordering}") == expected


def test_pages_share_one_count_and_one_order(owner_client):
    first = owner_client.get(f"{URL}?ordering=model&page_size=2").json()
    assert first["count"] == 4
    seen = [row["external_id"] for row in first["results"]]
    page = first
    while page["next"]:
        page = owner_client.get(page["next"]).json()
        seen += [row["external_id"] for row in page["results"]]
    assert sorted(seen) == ["sre-1", "sre-2", "web-1", "web-2"] and len(seen) == 4


def test_search_returns_matching_steps_with_snippets(owner_client):
    body = owner_client.get(f"{URL}?q=kubectl").json()
    by_id = {row["external_id"]: row for row in body["results"]}
    assert [m["index"] for m in by_id["sre-1"]["matches"]] == [3]
    assert [m["index"] for m in by_id["sre-2"]["matches"]] == [1]
    assert "kubectl" in by_id["sre-1"]["matches"][0]["snippet"]
    assert {"id", "external_id", "model", "outcome"} <= set(by_id["sre-1"])
    assert owner_client.get(f"{URL}?model=claude").json()["results"][0]["matches"] == []


def test_search_ranks_the_trace_with_more_of_the_words_first(owner_client, world):
    from traces.models import Step

    Step.objects.filter(trace=world.fresh, index=2).update(content="kubectl kubectl kubectl delete delete")
    Step.objects.filter(trace=world.fresh, index=4).update(content="kubectl delete again")
    assert ids(owner_client, "q=kubectl+delete")[0] == "web-1"


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("outcome=maybe", "outcome"),
        ("score_min=lots", "score_min"),
        ("gold_mode=FM-9.9", "gold_mode"),
        ("ordering=secret", "ordering"),
        ("meta=broken", "meta"),
    ],
)
def test_bad_parameters_answer_400_naming_them(owner_client, query, param):
    response = owner_client.get(f"{URL}?{query}")
    assert response.status_code == 400
    assert param in response.json()["fields"]


def test_postgres_full_text_search_uses_whole_words_and_the_index(owner_client):
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    # Whole words on PostgreSQL: "kubect" is no word of any step (SQLite's LIKE would find it).
    assert ids(owner_client, "q=kubect") == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'traces_stepsearch_vector'")
        (definition,) = cursor.fetchone()
    assert "gin" in definition.lower() and "(vector)" in definition


def test_counts_only_the_projects_traces_whatever_matches_elsewhere(owner_client, world, annotator_a):
    """The count of a filtered list is taken on the project's own membership: a trace of another project
    that matches the same search, tool and labels is neither listed nor counted."""
    other = ProjectFactory(slug="elsewhere", taxonomy_version=world.project.taxonomy_version)
    batch = BatchFactory(name="elsewhere")
    stranger = trace_with_steps(6, batch=batch, external_id="far-1")
    other.batches.add(batch)
    Step.objects.filter(trace=stranger, index=3).update(
        kind="tool_call", tool_name="bash", tool_args={"cmd": "kubectl delete"}, content="kubectl namespace"
    )
    submit(other, stranger, annotator_a, {"FM-1.5": [3]})
    for query in ("q=kubectl", "tool=bash", "tool_args=kubectl", "human_mode=FM-1.5", "evidence_tool=bash"):
        body = owner_client.get(f"{URL}?{query}").json()
        assert "far-1" not in [row["external_id"] for row in body["results"]]
        assert body["count"] == len(body["results"])


def test_a_list_filtered_further_counts_its_own_rows(world):
    """A list that carries a count taken another way keeps it only while its rows stay the same."""
    traces = Trace.objects.in_project(world.project).counted_by(lambda: 99)
    assert traces.count() == 99
    assert traces.only("id").defer("raw").select_related("batch").order_by("-id").count() == 99
    assert traces.filter(external_id="sre-1").count() == 1
    assert traces.exclude(external_id="sre-1").count() == 3
    without = traces.excluding(world.gold.pk)
    assert without.count() == 98
    assert traces.excluding(world.gold.pk).excluding(world.gold.pk).count() == 98


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL planner setting")
def test_counting_a_list_leaves_the_callers_transaction_planning_as_before(owner_client, world):
    """The membership count plans without hash joins inside its own savepoint and puts the setting back."""
    from django.db import transaction

    with transaction.atomic(), connection.cursor() as cursor:
        body = owner_client.get(f"{URL}?evidence_kind=tool_call").json()
        cursor.execute("SELECT current_setting('enable_hashjoin')")
        assert body["count"] == 1 and cursor.fetchone()[0] == "on"
