"""The representation follows the project: traces imported later get vectors in the same space; and the
embeddings path, against the local stand-in's /v1/embeddings."""

from __future__ import annotations

import json

from annotator.models import LLMConfig, TraceRepresentation, TraceVector
from annotator.services.imports import do_import_traces
from tests.llm.fake_server import EMBEDDING_DIMENSIONS
from tests.similar.conftest import TARGET_STEPS, build, client_for
from traces.models import Trace

URL = "/api/projects/demo-project/traces/"


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_traces_imported_later_are_ranked_in_the_same_representation(
    project, planted, owner, tmp_path, django_capture_on_commit_callbacks
):
    first = build(project)
    late_twin = {"id": "late-twin", "steps": [{"kind": "message", "content": text} for text in TARGET_STEPS]}
    other = {
        "id": "late-other",
        "steps": [{"kind": "message", "content": "select join index postgres vacuum"}],
    }
    path = _write(tmp_path / "late.jsonl", [late_twin, other])
    with django_capture_on_commit_callbacks(execute=True):
        do_import_traces([(path, "late.jsonl")], batch_name="late", user=owner, project=project)
    current = TraceRepresentation.objects.get(pk=first.pk)
    assert current.version == 1 and current.traces_done == len(planted.all) + 2  # no rebuild: an update
    late = Trace.objects.get(external_id="late-twin")
    assert TraceVector.objects.filter(project=project, version=1, trace=late).exists()
    body = client_for(owner).get(URL, {"like": planted.target.pk, "page_size": 2}).json()
    # The target's very steps (its task text aside): closer than any planted twin.
    assert body["results"][0]["id"] == late.pk and body["results"][0]["similarity"] > 0.95
    assert body["results"][1]["id"] == planted.twins[0].pk


def test_the_first_import_into_a_project_starts_its_first_build(
    project, owner, tmp_path, django_capture_on_commit_callbacks
):
    records = [
        {"id": f"t{i}", "steps": [{"kind": "message", "content": f"alpha beta {i} gamma"}]} for i in range(4)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        do_import_traces(
            [(_write(tmp_path / "a.jsonl", records), "a.jsonl")], batch_name="a", user=owner, project=project
        )
    built = TraceRepresentation.objects.get(project=project)
    assert built.status == "succeeded" and built.traces_done == 4


def test_with_an_embeddings_model_the_endpoint_gives_the_vectors(project, planted, owner, embeddings_server):
    built = build(project)
    assert (built.status, built.method, built.model) == ("succeeded", "embeddings", "embed-small")
    assert built.dimensions == EMBEDDING_DIMENSIONS and not built.fitted
    sent = [seen for seen in embeddings_server.requests if seen.path == "/v1/embeddings"]
    assert sent and {seen.body["model"] for seen in sent} == {"embed-small"}
    assert sum(len(seen.body["input"]) for seen in sent) == len(planted.all)
    body = client_for(owner).get(URL, {"like": planted.target.pk, "page_size": 3}).json()
    assert [row["id"] for row in body["results"]] == [twin.pk for twin in planted.twins]


def test_an_embeddings_endpoint_that_refuses_fails_the_build_with_a_reason(
    project, planted, embeddings_server
):
    from tests.llm.fake_server import Reply

    embeddings_server.push(Reply(401, {"error": "bad key"}))
    built = build(project)
    assert built.status == "failed"
    assert "HTTP 401" in built.error and "embed-small" in built.error
    assert not TraceVector.objects.filter(project=project).exists()


def test_an_embeddings_build_over_its_cap_is_refused_before_anything_is_sent(
    project, planted, embeddings_server, monkeypatch
):
    from annotator.similar import service

    monkeypatch.setattr(service, "MAX_EMBEDDED_TRACES", len(planted.all) - 1)
    built = build(project)
    assert built.status == "failed"
    assert f"at most {len(planted.all) - 1} traces" in built.error and "TF-IDF" in built.error
    assert not [seen for seen in embeddings_server.requests if seen.path == "/v1/embeddings"]


def test_an_owner_names_the_embeddings_model_in_the_llm_settings(project, owner, embeddings_server):
    client = client_for(owner)
    url = "/api/projects/demo-project/llm-settings/"
    answer = client.patch(url, {"embeddings_model": "embed-large"}, content_type="application/json")
    assert answer.status_code == 200 and answer.json()["embeddings_model"] == "embed-large"
    assert LLMConfig.objects.get(project=project).embeddings_model == "embed-large"
    page = client.get(f"/p/{project.slug}/llm/").content.decode()
    assert 'name="embeddings_model"' in page and 'value="embed-large"' in page


def test_the_reconciliation_sends_an_update_lost_after_an_import(project, planted):
    from annotator.services.jobs import do_reconcile
    from annotator.similar.freshness import projects_missing_vectors
    from tests.factories import trace_with_steps

    build(project)
    assert projects_missing_vectors() == []
    late = trace_with_steps(3, batch=planted.target.batch)  # its update task never ran
    assert projects_missing_vectors() == [project.pk]
    do_reconcile()  # sends annotator.similar.update (eager here: it runs at once)
    assert TraceVector.objects.filter(project=project, trace=late).exists()
    assert projects_missing_vectors() == []
