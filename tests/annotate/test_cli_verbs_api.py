"""The CLI's verbs that the API lacked: `import_annotations` (POST label-imports/) and `llm_annotate
--dry-run` (POST llm-runs/preview/); owners only, and an archived project takes no new work."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import Annotation, LLMConfig
from annotator.services.projects import do_archive_project
from tests.factories import BatchFactory, trace_with_steps


def _labels(*records) -> SimpleUploadedFile:
    body = "\n".join(json.dumps(record) for record in records).encode()
    return SimpleUploadedFile("labels.jsonl", body, content_type="application/jsonl")


def _world(project):
    batch = BatchFactory(name="run-1")
    project.batches.add(batch)
    return [trace_with_steps(3, batch=batch, external_id=f"t{n}") for n in range(2)]


def test_an_owner_imports_labels_from_a_file(client, project, owner):
    _world(project)
    client.force_login(owner)
    response = client.post(
        f"/api/projects/{project.slug}/label-imports/",
        {
            "files": [
                _labels(
                    {"trace": "t0", "annotator": "a1", "labels": [{"mode": "FM-1.3", "steps": [1]}]},
                    {"trace": "t1", "annotator": "a1", "no_failure": True},
                )
            ]
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["created"], body["labels"], body["users_created"]) == (2, 1, ["labels/a1"])
    assert Annotation.objects.filter(assignment__project=project, status="submitted").count() == 2


def test_a_bad_file_imports_nothing_and_names_the_record(client, project, owner):
    _world(project)
    client.force_login(owner)
    response = client.post(
        f"/api/projects/{project.slug}/label-imports/",
        {
            "files": [
                _labels({"trace": "t0", "annotator": "a1", "labels": []}, {"trace": "zz", "annotator": "a1"})
            ]
        },
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "labels.jsonl" in detail and "zz" in detail and "/tmp" not in detail
    assert not Annotation.objects.exists()


def test_label_imports_are_for_owners_of_live_projects(
    client, project, owner, annotator_a, adjudicator, outsider
):
    _world(project)
    url = f"/api/projects/{project.slug}/label-imports/"
    for user, code in ((outsider, 404), (annotator_a, 403), (adjudicator, 403)):
        client.force_login(user)
        assert client.post(url, {"files": [_labels({"trace": "t0", "annotator": "a"})]}).status_code == code
    do_archive_project(project)
    client.force_login(owner)
    refused = client.post(url, {"files": [_labels({"trace": "t0", "annotator": "a"})]})
    assert refused.status_code == 400 and "archived" in refused.json()["detail"]


def test_the_dry_run_shows_the_messages_and_calls_nothing(client, project, owner):
    _world(project)
    LLMConfig.objects.create(project=project, base_url="http://127.0.0.1:1/v1", model="m-1")
    client.force_login(owner)
    response = client.post(
        f"/api/projects/{project.slug}/llm-runs/preview/", {"batch": "run-1"}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["model"], body["trace"], body["prompt_version"]) == ("m-1", "t0", 1)
    assert [m["role"] for m in body["messages"]][:1] == ["system"]
    missing = client.post(
        f"/api/projects/{project.slug}/llm-runs/preview/", {"batch": "nope"}, content_type="application/json"
    )
    assert missing.status_code == 400 and "nope" in missing.json()["detail"]


def test_an_archived_project_starts_no_llm_run(client, project, owner):
    _world(project)
    LLMConfig.objects.create(project=project, base_url="https://api.openai.com/v1", model="m-1")
    do_archive_project(project)
    client.force_login(owner)
    response = client.post(
        f"/api/projects/{project.slug}/llm-runs/", {"batch": "run-1"}, content_type="application/json"
    )
    assert response.status_code == 400 and "archived" in response.json()["detail"]
