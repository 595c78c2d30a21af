"""An owner stops a similar-traces build: its worker sends no further embedding batch and writes no further
chunk, the build stays stopped and says so (panel, API, command), and the representation searched before
it is kept."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from annotator.llm.client import ChatClient
from annotator.models import Assignment, TraceRepresentation, TraceVector
from annotator.services.imports import do_import_traces
from annotator.similar import service
from annotator.similar.service import do_build, do_request_build, do_stop_build
from annotator.similar.vectors import TfidfModel
from tests.similar.conftest import build, client_for

TRACES = "/api/projects/demo-project/traces/"
STATE = "/api/projects/demo-project/similar/"


@pytest.fixture
def small_steps(monkeypatch):
    """Chunks of 10 traces, embedding batches of 4: the 34 planted traces take several of each."""
    monkeypatch.setattr(service, "CHUNK_TRACES", 10)
    monkeypatch.setattr(service, "EMBED_BATCH", 4)


def _embedding_requests(server) -> int:
    return sum(seen.path == "/v1/embeddings" for seen in server.requests)


def _panel(client, project, trace) -> str:
    return client.get(
        f"/p/{project.slug}/t/{trace.pk}/similar/", headers={"HX-Request": "true"}
    ).content.decode()


def test_a_build_stopped_between_embedding_batches_sends_nothing_more_and_stays_stopped(
    project,
    planted,
    owner,
    embeddings_server,
    small_steps,
    monkeypatch,
    tmp_path,
    django_capture_on_commit_callbacks,
):
    embed = ChatClient.embed

    def embed_then_stop_at_the_second(client, texts, model):
        found = embed(client, texts, model)
        if _embedding_requests(embeddings_server) == 2:
            do_stop_build(project)  # the owner presses stop while the second batch is out
        return found

    monkeypatch.setattr(ChatClient, "embed", embed_then_stop_at_the_second)
    stopped = build(project)
    assert (stopped.status, stopped.error) == ("stopped", "stopped by the owner")
    assert _embedding_requests(embeddings_server) == 2, "the chunk's third batch was never sent"
    assert stopped.traces_done == 0 and not TraceVector.objects.filter(project=project).exists()

    # A redelivered task and the next import leave it as it is: no request, no new build.
    assert do_build(stopped.pk).status == "stopped"
    path = tmp_path / "late.jsonl"
    path.write_text(json.dumps({"id": "late", "steps": [{"kind": "message", "content": "hello"}]}) + "\n")
    with django_capture_on_commit_callbacks(execute=True):
        do_import_traces([(path, "late.jsonl")], batch_name="late", user=owner, project=project)
    assert _embedding_requests(embeddings_server) == 2
    assert list(TraceRepresentation.objects.filter(project=project).values_list("status", flat=True)) == [
        "stopped"
    ]

    # It says so where the owner looks.
    state = client_for(owner).get(STATE).json()
    assert state["building"] is None and state["current"] is None
    assert (state["latest"]["status"], state["latest"]["error"]) == ("stopped", "stopped by the owner")
    panel = _panel(client_for(owner), project, planted.target)
    assert "Build v1 stopped (stopped by the owner) at 0 / 34 traces." in panel
    assert "Compute similar traces" in panel and "Stop the build" not in panel


def test_a_rebuild_stopped_between_chunks_keeps_the_representation_searched(
    project, planted, owner, small_steps, monkeypatch
):
    first = build(project)
    transform = TfidfModel.transform
    chunks = []

    def transform_then_stop(model, texts):
        chunks.append(len(texts))
        if len(chunks) == 1:
            do_stop_build(project)  # stopped while the first chunk is being vectorised
        return transform(model, texts)

    monkeypatch.setattr(TfidfModel, "transform", transform_then_stop)
    second = do_build(do_request_build(project).pk)
    assert (second.version, second.status) == (2, "stopped")
    assert chunks == [10], "no chunk after the stop"
    assert second.traces_done == 0, "the chunk under way is not counted as the build's"

    # Similar traces still come from the first build, every vector of it kept.
    assert TraceVector.objects.filter(project=project, version=first.version).count() == len(planted.all)
    ranked = client_for(owner).get(TRACES, {"like": planted.target.pk, "page_size": 3}).json()["results"]
    assert [row["id"] for row in ranked] == [twin.pk for twin in planted.twins]
    panel = _panel(client_for(owner), project, planted.target)
    assert "Build v2 stopped (stopped by the owner)" in panel and "still come from v1" in panel


def test_the_stop_button_shows_beside_the_builds_progress_for_owners_only(
    project, planted, owner, adjudicator, annotator_a
):
    Assignment.objects.create(project=project, trace=planted.target, annotator=annotator_a)
    queued = do_request_build(project)
    stop_url = f"/p/{project.slug}/t/{planted.target.pk}/similar/stop/"
    owner_client = client_for(owner)
    panel = _panel(owner_client, project, planted.target)
    assert "Building the representation" in panel and "Stop the build" in panel and stop_url in panel
    for member in (adjudicator, annotator_a):
        seen = _panel(client_for(member), project, planted.target)
        assert "Building the representation" in seen and "Stop the build" not in seen
    assert client_for(adjudicator).post(stop_url).status_code == 403
    assert TraceRepresentation.objects.get(pk=queued.pk).status == "queued"

    answer = owner_client.post(stop_url, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    text = answer.content.decode()
    assert "Build v1 stopped (stopped by the owner)" in text and "Building the representation" not in text
    assert TraceRepresentation.objects.get(pk=queued.pk).status == "stopped"
    assert do_build(queued.pk).status == "stopped", "a worker handed it later leaves it stopped"


def test_the_api_and_the_command_stop_a_build_and_say_when_there_is_none(project, planted, owner, capsys):
    api = APIClient()
    api.force_authenticate(owner)
    assert api.post(f"{STATE}stop/").status_code == 409
    do_request_build(project)
    body = api.post(f"{STATE}stop/").json()
    assert body["building"] is None and body["latest"]["status"] == "stopped"

    do_request_build(project)
    call_command("similar_traces", project.slug, "--stop")
    out = capsys.readouterr().out
    assert "Stopped build v2." in out and "v2 stopped (stopped by the owner) at 0 / 34 traces" in out
    with pytest.raises(CommandError, match="nothing to stop"):
        call_command("similar_traces", project.slug, "--stop")
