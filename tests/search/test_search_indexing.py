"""The full-text search table is filled after the import (migration traces 0012, annotator.search.indexing):
a trace is found before its indexing ran and after, the reconciliation indexes what a lost task left, and
deleting a trace deletes its search rows. PostgreSQL only: SQLite searches by LIKE and has no table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection

from annotator.search.indexing import index_pending, pending_count
from annotator.services.imports import do_import_traces
from annotator.services.jobs import do_reconcile
from tests.labels import project_trace
from tests.services import missing
from traces.models import Step, Trace

URL = "/api/projects/demo-project/traces/"


@pytest.fixture(autouse=True)
def postgres_only():
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")


def write_run(path: Path, words: dict[str, str]) -> Path:
    """One native trace per (external id, step content)."""
    lines = [
        json.dumps(
            {
                "id": external_id,
                "system": "AG2",
                "model": "gpt-4o",
                "steps": [
                    {"agent": "user", "role": "user", "content": "Find the broken deploy."},
                    {"agent": "coder", "role": "assistant", "content": content},
                ],
            }
        )
        for external_id, content in words.items()
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def search(client, q: str) -> list[str]:
    response = client.get(URL, {"q": q})
    assert response.status_code == 200, response.content
    return sorted(row["external_id"] for row in response.json()["results"])


def search_ranked(client, q: str) -> list[str]:
    response = client.get(URL, {"q": q})
    assert response.status_code == 200, response.content
    return [row["external_id"] for row in response.json()["results"]]


def search_rows(trace_ids: list[int]) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM traces_stepsearch WHERE trace_id = ANY(%s)", [trace_ids])
        return cursor.fetchone()[0]


@pytest.fixture
def owner_client(client, owner, project):
    client.force_login(owner)
    return client


def imported(project, owner, tmp_path, *, run_tasks: bool, capture) -> list[int]:
    path = write_run(
        tmp_path / "run.jsonl",
        {"deploy-1": "kubectl rollout undo deployment web", "deploy-2": "helm upgrade web ./chart"},
    )
    with capture(execute=run_tasks):
        do_import_traces([(path, "run.jsonl")], batch_name="run", user=owner, project=project)
    return list(Trace.objects.filter(batch__name="run").order_by("pk").values_list("pk", flat=True))


def test_an_imported_trace_is_searchable_once_its_indexing_ran(
    project, owner, owner_client, tmp_path, django_capture_on_commit_callbacks
):
    ids = imported(project, owner, tmp_path, run_tasks=True, capture=django_capture_on_commit_callbacks)
    # The task sent after the commit ran (eager): every step is in the search table, nothing pending.
    assert search_rows(ids) == 4
    assert pending_count() == 0
    assert search(owner_client, "rollout") == ["deploy-1"]
    assert search(owner_client, "web") == ["deploy-1", "deploy-2"]


def test_a_trace_whose_indexing_has_not_run_is_found_all_the_same(
    project, owner, owner_client, tmp_path, django_capture_on_commit_callbacks
):
    ids = imported(project, owner, tmp_path, run_tasks=False, capture=django_capture_on_commit_callbacks)
    assert search_rows(ids) == 0
    assert pending_count() == 2
    assert search(owner_client, "helm") == ["deploy-2"]
    assert search(owner_client, "web") == ["deploy-1", "deploy-2"]
    assert index_pending() == 2
    assert index_pending() == 0  # idempotent
    assert search(owner_client, "helm") == ["deploy-2"]


def test_the_reconciliation_indexes_traces_left_unindexed(
    project, owner, owner_client, tmp_path, django_capture_on_commit_callbacks
):
    ids = imported(project, owner, tmp_path, run_tasks=False, capture=django_capture_on_commit_callbacks)
    done = do_reconcile()  # as beat runs it: the task it sends runs inline (eager)
    assert done.unindexed_traces == 2
    assert search_rows(ids) == 4
    assert pending_count() == 0
    assert search(owner_client, "rollout") == ["deploy-1"]


def test_deleting_a_trace_deletes_its_search_rows(
    project, owner, tmp_path, django_capture_on_commit_callbacks
):
    ids = imported(project, owner, tmp_path, run_tasks=True, capture=django_capture_on_commit_callbacks)
    assert trace_rows([ids[0]], "traces_traceword") == 1
    Trace.objects.filter(pk=ids[0]).delete()
    assert search_rows([ids[0]]) == 0
    assert trace_rows([ids[0]], "traces_traceword") == 0
    assert search_rows([ids[1]]) == 2
    # A trace deleted while still pending leaves nothing pending either.
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO traces_searchpending (trace_id) VALUES (%s)", [ids[1]])
    Trace.objects.filter(pk=ids[1]).delete()
    assert search_rows([ids[1]]) == 0
    assert pending_count() == 0


def trace_rows(trace_ids: list[int], table: str = "traces_tracesearch") -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(DISTINCT trace_id) FROM {table} WHERE trace_id = ANY(%s)", [trace_ids])
        return cursor.fetchone()[0]


def test_a_one_word_search_ranks_each_trace_by_its_best_step(project, owner_client):
    contents = {
        "once": ["rollback done", "nothing here", "rollback again"],
        "thrice": ["rollback rollback rollback", "rollback"],
        "twice": ["rollback and rollback", "plan", "rollback rollback"],
        "quoted": ["O'Reilly said \\ rollback", "path C:\\tmp\\x"],
    }
    ids = {}
    for name, steps in contents.items():
        trace = project_trace(project, len(steps), external_id=name)
        for index, content in enumerate(steps):
            Step.objects.filter(trace=trace, index=index).update(content=content)
        ids[name] = trace.pk
    pending = search_ranked(owner_client, "rollback")  # still pending: ranked from the steps
    assert index_pending() == len(contents)
    assert trace_rows(list(ids.values()), "traces_traceword") == len(contents)
    assert search_ranked(owner_client, "rollback") == pending == ["thrice", "twice", "once", "quoted"]
    assert search(owner_client, "reilly") == ["quoted"]
    one_a_page = [
        owner_client.get(URL, {"q": "rollback", "page_size": 1, "page": page}).json()["results"][0][
            "external_id"
        ]
        for page in range(1, 5)
    ]
    assert one_a_page == pending
    by_score = owner_client.get(URL, {"q": "rollback", "ordering": "rank"}).json()["results"]
    assert [row["external_id"] for row in by_score] == ["once", "quoted", "twice", "thrice"]
    with connection.cursor() as cursor:  # n orders the traces as their best step's rank, for every word
        cursor.execute(
            """
            SELECT w.lexeme, w.trace_id, w.n,
                   (SELECT max(ts_rank(s.vector, to_tsquery('simple', quote_literal(w.lexeme))))
                    FROM traces_stepsearch s WHERE s.trace_id = w.trace_id)
            FROM traces_traceword w WHERE w.trace_id = ANY(%s)
            """,
            [list(ids.values())],
        )
        rows = cursor.fetchall()
    assert rows
    for lexeme, _, n, rank in rows:
        for other_lexeme, _, other_n, other_rank in rows:
            if other_lexeme == lexeme:
                assert (n < other_n) == (rank < other_rank) and (n == other_n) == (rank == other_rank)


def test_the_tool_args_filter_reads_one_step_s_arguments_at_a_time(project, owner_client):
    trace = project_trace(project, 3, external_id="calls")
    Step.objects.filter(trace=trace, index=0).update(
        kind="tool_call", tool_name="kubectl", tool_args={"cmd": "get"}
    )
    Step.objects.filter(trace=trace, index=2).update(
        kind="tool_call", tool_name="kubectl", tool_args={"ns": "Prod"}
    )

    def tool_args(text: str) -> list[str]:
        response = owner_client.get(URL, {"tool_args": text})
        assert response.status_code == 200, response.content
        return [row["external_id"] for row in response.json()["results"]]

    for indexed in (False, True):
        if indexed:
            assert index_pending() == 1 and trace_rows([trace.pk]) == 1
        assert tool_args("prod") == ["calls"]
        assert tool_args('"get"') == ["calls"]
        assert tool_args("100%") == []
        assert tool_args('"get"}{"ns"') == []  # across two steps: no step has it
        assert tool_args('get"}\n{"ns') == []


def test_the_tool_args_filter_finds_indexed_and_pending_traces_together(project, owner_client):
    def calls(external_id: str, args: dict) -> Trace:
        trace = project_trace(project, 2, external_id=external_id)
        Step.objects.filter(trace=trace, index=1).update(kind="tool_call", tool_name="bash", tool_args=args)
        return trace

    calls("indexed", {"cmd": "helm upgrade PROD"})
    assert index_pending() == 1
    calls("pending", {"cmd": "helm rollback prod"})
    calls("other", {"cmd": "ls"})

    def tool_args(text: str) -> list[str]:
        response = owner_client.get(URL, {"tool_args": text})
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["count"] == len(body["results"])
        return sorted(row["external_id"] for row in body["results"])

    assert pending_count() == 2
    assert tool_args("prod") == ["indexed", "pending"]
    assert tool_args("HELM UP") == ["indexed"]
    index_pending()
    assert tool_args("prod") == ["indexed", "pending"]
    assert tool_args("Rollback") == ["pending"]
