"""The import page says things a browser user can act on: an unknown mode names the page's checkbox, not a
command-line flag."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import ImportJob
from annotator.services.label_import import UNKNOWN_MODE_HINT

pytestmark = pytest.mark.django_db


def test_an_unknown_mode_names_the_checkbox_on_the_import_page(
    client, project, owner, django_capture_on_commit_callbacks
):
    record = {
        "id": "t",
        "steps": [{"content": "x"}],
        "annotations": [{"annotator": "r", "labels": [{"mode": "Bogus"}]}],
    }
    upload = SimpleUploadedFile("bogus.jsonl", (json.dumps(record) + "\n").encode())
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/p/{project.slug}/import/", {"batch": "b", "files": [upload]}, HTTP_HX_REQUEST="true")
    job = ImportJob.objects.get()
    assert job.status == "failed"
    card = client.get(f"/p/{project.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "Bogus" in card
    assert "--ignore-unknown-modes" not in card and UNKNOWN_MODE_HINT not in card
    assert "Skip embedded labels whose mode is not in the taxonomy" in card
    page = client.get(f"/p/{project.slug}/import/").content.decode()
    assert 'id="ignore-unknown-modes"' in page
