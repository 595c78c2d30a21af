"""The outcomes page and API: owners upload a results file; errors name every bad record where the user
looks (the form's own partial, 422) and change nothing; others are refused."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotator.models import OutcomeImport
from tests.outcomes.conftest import outcomes_of

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
REPORT = json.dumps({"resolved_ids": ["django__django-11099"], "unresolved_ids": ["sympy__sympy-20590"]})


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _file(text: str, name: str = "run.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/octet-stream")


def test_an_owner_sets_outcomes_from_the_page(coding_project, owner):
    client = _client(owner)
    assert (
        "Upload results"
        in client.get(reverse("project-outcomes", args=[coding_project.slug])).content.decode()
    )
    url = reverse("project-outcomes-import", args=[coding_project.slug])
    response = client.post(url, {"file": _file(REPORT)}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and 'id="outcomes-form"' in body
    assert "2 traces named (swebench-report): changed 2" in body and "run.json" in body
    assert outcomes_of(coding_project)["django__django-11099"][0] == "success"


def test_the_page_lists_every_bad_record_in_the_form_and_changes_nothing(coding_project, owner):
    data = "external_id,outcome,score\ndjango__django-11099,success,1\nnot-a-trace,failure,0\nsympy__sympy-20590,won,\n"
    url = reverse("project-outcomes-import", args=[coding_project.slug])
    response = _client(owner).post(url, {"file": _file(data, "scores.csv")}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 422 and 'id="outcomes-form"' in body and 'role="alert"' in body
    assert "Nothing changed: scores.csv has 2 problem(s)." in body
    assert "line 3: unknown external id &#x27;not-a-trace&#x27; in this project" in body
    assert "line 4: outcome must be one of success, failure, unknown, not &#x27;won&#x27;" in body
    assert outcomes_of(coding_project)["django__django-11099"] == ("unknown", None)


def test_a_dry_run_from_the_page_changes_nothing(coding_project, owner):
    url = reverse("project-outcomes-import", args=[coding_project.slug])
    response = _client(owner).post(url, {"file": _file(REPORT), "dry_run": "on"}, **HTMX)
    assert "Dry run, nothing changed" in response.content.decode()
    assert not OutcomeImport.objects.exists()


def test_annotators_and_outsiders_may_not_set_outcomes(coding_project, annotator_a, outsider):
    url = reverse("project-outcomes-import", args=[coding_project.slug])
    assert _client(annotator_a).post(url, {"file": _file(REPORT)}).status_code == 403
    assert _client(outsider).post(url, {"file": _file(REPORT)}).status_code == 404
    assert {outcome for outcome, _ in outcomes_of(coding_project).values()} == {"unknown"}


def test_the_api_sets_outcomes_and_names_bad_records(coding_project, owner, annotator_a):
    url = reverse("api-outcomes-import", args=[coding_project.slug])
    client = _client(owner)
    bad = client.post(
        url, {"file": _file('{"external_id": "django__django-11099", "score": "x"}\n', "r.jsonl")}
    )
    assert bad.status_code == 400
    assert bad.json()["errors"] == ["line 1: score must be a number, not 'x'"]
    response = client.post(url, {"file": _file(REPORT)})
    assert response.status_code == 200
    assert response.json() == {
        "format": "swebench-report",
        "traces": 2,
        "changed": 2,
        "counts": {"success": 1, "failure": 1},
        "dry_run": False,
        "skipped": 0,
    }
    assert _client(annotator_a).post(url, {"file": _file(REPORT)}).status_code == 403
