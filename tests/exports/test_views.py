"""The export page, its htmx partials, the download and the API: owners only, tokens never echoed."""

from __future__ import annotations

import io
import zipfile
from html import unescape

import pytest
from django.urls import reverse

from annotator.models import Export

TOKEN = "hf_pageTypedSecret0987654321"


def page(project) -> str:
    return reverse("project-export", args=[project.slug])


def start(client, project, django_capture_on_commit_callbacks, **fields):
    data = {"license": "cc-by-4.0", "include_text": "on", **fields}
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(page(project), data, HTTP_HX_REQUEST="true")


def test_the_page_offers_the_form_and_an_empty_history(client, labelled, owner):
    client.force_login(owner)
    response = client.get(page(labelled))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'hx-target="#export-result"' in html and 'id="export-result"' in html
    assert 'name="hf_token"' in html and 'type="password"' in html
    assert "No exports of this project yet." in html
    detail = client.get(reverse("project-detail", args=[labelled.slug])).content.decode()
    assert page(labelled) in detail


def test_an_htmx_post_runs_the_export_and_returns_the_result_partial(
    client, labelled, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    response = start(client, labelled, django_capture_on_commit_callbacks, gold_only="on")
    html = response.content.decode()
    export = Export.objects.get()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="export-result">')
    job_url = reverse("project-export-job", args=[labelled.slug, export.pk])
    assert f'id="export-job-{export.pk}"' in html and f'hx-get="{job_url}"' in html  # queued: it polls
    assert export.options["gold_only"] is True and export.options["include_text"] is True
    assert export.options["private"] is False  # an unticked box is a no

    job = client.get(job_url, HTTP_HX_REQUEST="true").content.decode()
    assert job.lstrip().startswith(f'<div class="card" id="export-job-{export.pk}"')
    assert "succeeded" in job and "hx-get" not in job  # finished: no more polling
    download = reverse("project-export-download", args=[labelled.slug, export.pk])
    assert download in job

    response = client.get(download)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()
    assert {"README.md", "taxonomy.yaml", "traces/train-00000.parquet", "gold/train-00000.parquet"} <= set(
        names
    )
    assert "Download" in client.get(page(labelled)).content.decode()


def test_a_running_job_polls_itself_with_a_link_beside(client, labelled, owner):
    export = Export.objects.create(project=labelled, status="running", progress=40, log="Writing annotations")
    client.force_login(owner)
    html = client.get(reverse("project-export-job", args=[labelled.slug, export.pk])).content.decode()
    url = reverse("project-export-job", args=[labelled.slug, export.pk])
    assert f'hx-get="{url}"' in html and f'href="{url}"' in html and "40%" in html


def test_bad_options_are_named_and_nothing_starts(
    client, labelled, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    response = start(
        client,
        labelled,
        django_capture_on_commit_callbacks,
        batches="nope",
        repo_id="not a repo",
        hf_token=TOKEN,
    )
    html = unescape(response.content.decode())
    assert response.status_code == 400
    assert "batch 'nope' is not in this project" in html and "is not a Hub repo id" in html
    assert TOKEN not in html and not Export.objects.exists()


def test_publishing_without_any_token_is_refused_up_front(
    client, labelled, owner, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    client.force_login(owner)
    response = start(client, labelled, django_capture_on_commit_callbacks, repo_id="olivia/mast")
    assert response.status_code == 400 and "needs a Hugging Face token" in response.content.decode()


@pytest.mark.parametrize(
    ("persona", "status"), [("annotator_a", 403), ("adjudicator", 403), ("outsider", 404)]
)
def test_only_owners_reach_the_page_the_job_the_download_and_the_api(
    client, labelled, request, persona, status, tmp_path
):
    export = Export.objects.create(project=labelled, status="succeeded", path=str(tmp_path / "x.zip"))
    client.force_login(request.getfixturevalue(persona))
    urls = [
        page(labelled),
        reverse("project-export-job", args=[labelled.slug, export.pk]),
        reverse("project-export-download", args=[labelled.slug, export.pk]),
        reverse("api-export-status", args=[labelled.slug, export.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == status, url
    assert client.post(page(labelled), {"license": "cc-by-4.0"}).status_code == status
    assert client.post(reverse("api-export-start", args=[labelled.slug]), {}).status_code == status
    assert Export.objects.count() == 1


def test_the_api_starts_an_export_and_reports_it(client, labelled, owner, django_capture_on_commit_callbacks):
    client.force_login(owner)
    url = reverse("api-export-start", args=[labelled.slug])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {"batches": ["run-1"], "include_text": False, "license": "mit"},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and "hf_token" not in body
    status = client.get(reverse("api-export-status", args=[labelled.slug, body["id"]])).json()
    assert status["status"] == "succeeded" and status["progress"] == 100
    assert status["options"]["batches"] == ["run-1"] and status["options"]["license"] == "mit"
    assert status["download_url"].endswith(f"/p/{labelled.slug}/export/{body['id']}/download/")
    bad = client.post(url, {"license": "wtfpl"}, content_type="application/json")
    assert bad.status_code == 400 and "wtfpl" in bad.json()["detail"]


def test_the_api_is_in_the_openapi_schema(client, owner):
    client.force_login(owner)
    schema = client.get(reverse("api-schema")).content.decode()
    assert "/api/projects/{slug}/exports/" in schema and "/api/projects/{slug}/exports/{export_id}/" in schema
    assert "hf_token" in schema and "writeOnly: true" in schema


def test_an_export_whose_task_cannot_be_sent_fails_with_a_reason_on_its_card(
    client, labelled, owner, django_capture_on_commit_callbacks, monkeypatch
):
    from kombu.exceptions import OperationalError

    from annotator.services.enqueue import celery_app

    app = celery_app()
    from annotator.services import enqueue

    def refuse(self, args=None, kwargs=None, **options):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(enqueue, "is_eager", lambda: False)
    monkeypatch.setattr(type(app.tasks["annotator.exports.run"]), "apply_async", refuse)
    client.force_login(owner)
    assert start(client, labelled, django_capture_on_commit_callbacks).status_code == 200
    export = Export.objects.get()
    assert export.status == "failed" and export.finished_at is not None
    job_url = reverse("project-export-job", args=[labelled.slug, export.pk])
    job = client.get(job_url, HTTP_HX_REQUEST="true").content.decode()
    assert "Could not reach the task queue" in job and "hx-get" not in job
    assert "6379" not in job  # the broker's address stays in the log


def test_the_past_exports_come_with_the_export_started(
    client, labelled, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    url = page(labelled)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"license": "cc-by-4.0", "gold_only": "on"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'id="past-exports" hx-swap-oob="outerHTML"' in html
    assert "No exports of this project yet" not in html
    export = Export.objects.get()
    job_link = reverse("project-export-job", args=[labelled.slug, export.pk])
    assert f'href="{job_link}"' in html.split('id="past-exports"')[1]  # the card's job is listed
    # Each poll of the job card brings the list along, so a finished job shows there as it does above.
    poll = client.get(reverse("project-export-job", args=[labelled.slug, export.pk]), HTTP_HX_REQUEST="true")
    assert 'id="past-exports" hx-swap-oob="outerHTML"' in poll.content.decode()
