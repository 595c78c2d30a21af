"""Hostile input gets a 4xx that says what is wrong, never a 500: NUL bytes at every input sink, numbers beyond
their columns, and uploads beyond the size limit (issue 11, points 2 and 9)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import Assignment, ImportJob, LLMRun
from annotator.services.uploads import UploadTooLarge, check_upload_request
from tests.factories import BatchFactory, trace_with_steps

NUL = "\x00"
S = "demo-project"


@pytest.fixture
def trace(project):
    batch = BatchFactory(name="b1")
    project.batches.add(batch)
    return trace_with_steps(4, batch=batch)


@pytest.fixture
def slot(trace, annotator_a):
    return Assignment.objects.create(project=trace.batch.projects.first(), trace=trace, annotator=annotator_a)


def file(name: str = "a.jsonl", body: bytes = b"{}\n") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, body, content_type="application/octet-stream")


# (who, method, url, body, how the body travels). {t}: a trace id, {a}: annotator A's assignment.
SINKS = [
    ("owner", "get", f"/p/{S}/t/{{t}}/steps/?q=a{NUL}b", None, None),  # step search
    ("owner", "get", f"/p/{S}/t/{{t}}/steps/?kind=tool{NUL}&agent=x", None, None),  # step filters
    ("owner", "get", f"/p/{S}/traces/?outcome=fail{NUL}ure&model={NUL}", None, None),  # trace list filters
    ("owner", "get", f"/p/{S}/adjudication/?status={NUL}", None, None),
    ("owner", "get", f"/p/{S}/agreement/?batch={NUL}", None, None),
    ("owner", "get", f"/p/{S}/signatures/?model={NUL}", None, None),
    ("owner", "get", f"/taxonomies/mast/?version={NUL}", None, None),
    ("owner", "get", f"/p/{S}/a{NUL}b/", None, None),  # the project slug, page
    ("owner", "get", f"/api/projects/{S}{NUL}/traces/", None, None),  # the project slug, API
    ("owner", "get", f"/api/projects/{S}/traces/{{t}}/search/?q={NUL}", None, None),
    ("owner", "get", f"/api/projects/{S}/assignments/?status={NUL}", None, None),
    ("owner", "post", f"/p/{S}/settings/", {"name": f"n{NUL}", "overlap": "2", "reservation_minutes": "30"}, "form"),
    ("owner", "post", f"/p/{S}/members/add/", {"username": f"ana{NUL}", "role": "annotator"}, "form"),
    ("owner", "post", f"/p/{S}/import/", {"batch": f"batch{NUL}name", "files": "file"}, "multipart"),
    ("owner", "post", f"/api/projects/{S}/imports/", {"batch": f"b{NUL}", "files": "file"}, "multipart"),
    ("owner", "post", f"/api/projects/{S}/llm-runs/", {"batch": f"b1{NUL}"}, "json"),
    ("owner", "post", "/api/token/", {"username": f"olivia{NUL}", "password": "x"}, "json"),
    ("annotator_a", "post", f"/p/{S}/a/{{a}}/save/", {"version": "0", f"label:FM-1.1{NUL}": "on"}, "form"),
    ("annotator_a", "put", f"/api/projects/{S}/assignments/{{a}}/annotation/", {"version": 0, "labels": [{"mode": f"FM-1.1{NUL}"}]}, "json"),
    ("annotator_a", "put", f"/api/projects/{S}/assignments/{{a}}/annotation/", {"version": 0, "note": f"a{NUL}"}, "json"),
]  # fmt: skip


@pytest.mark.parametrize(("who", "method", "url", "body", "kind"), SINKS)
def test_a_nul_byte_at_any_input_is_refused_with_400_naming_where(client, request, trace, slot, who, method, url, body, kind):  # fmt: skip
    client.force_login(request.getfixturevalue(who))
    url = url.format(t=trace.pk, a=slot.pk)
    if kind == "multipart":
        body = dict(body)
        body["files"] = file()
        response = client.post(url, body, HTTP_HX_REQUEST="true")
    elif kind == "json":
        response = getattr(client, method)(url, body, content_type="application/json")
    elif kind == "form":
        response = client.post(url, body)
    else:
        response = client.get(url)
    assert response.status_code == 400, (url, response.status_code, response.content[:300])
    text = response.content.decode()
    assert "NUL character" in text
    assert NUL not in text  # the value is named, never echoed
    if url.startswith("/api/"):
        assert "NUL character" in response.json()["detail"]
    assert not ImportJob.objects.exists()


def test_the_literal_text_backslash_u0000_in_json_is_not_a_nul(client, annotator_a, slot):
    client.force_login(annotator_a)
    response = client.put(
        f"/api/projects/{S}/assignments/{slot.pk}/annotation/",
        '{"version": 0, "note": "a regex like \\\\u0000 is fine"}',
        content_type="application/json",
    )
    assert response.status_code == 200, response.content


def test_an_llm_run_limit_beyond_a_32_bit_column_is_a_400(client, project, owner, trace):
    client.force_login(owner)
    for limit in (2**31, 10**30):
        response = client.post(
            f"/api/projects/{S}/llm-runs/", {"batch": "b1", "limit": limit}, content_type="application/json"
        )
        assert response.status_code == 400, response.content
        assert "limit" in response.json()["fields"]  # the API's one error shape
    response = client.post(f"/p/{S}/llm/runs/", {"batch": "b1", "limit": str(2**31)}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and "2,147,483,647" in response.content.decode()
    assert not LLMRun.objects.exists()


def test_out_of_range_numbers_in_urls_and_forms_are_not_server_errors(
    client, owner, annotator_a, trace, slot
):
    client.force_login(annotator_a)
    huge = "9" * 30
    assert client.get(f"/p/{S}/t/{trace.pk}/steps/?step={huge}&page={huge}").status_code in (200, 404)
    response = client.post(
        f"/api/projects/{S}/assignments/{slot.pk}/annotation/",
        {"version": 0, "elapsed_seconds": "1e999"},
        content_type="application/json",
    )
    assert response.status_code < 500
    response = client.post(f"/p/{S}/a/{slot.pk}/save/", {"version": huge, "elapsed": "1e999"})
    assert response.status_code < 500


# ---- upload size ---------------------------------------------------------------------------------------


def test_an_upload_over_the_limit_is_refused_with_413_before_it_is_read(client, owner, project, settings):
    settings.IMPORT_MAX_UPLOAD_MB = 1
    client.force_login(owner)
    big = file("big.jsonl", b" " * (3 * 1024 * 1024))
    response = client.post(f"/p/{S}/import/", {"batch": "b", "files": big}, HTTP_HX_REQUEST="true")
    assert response.status_code == 413
    text = response.content.decode()
    assert "at most 1 MB can be sent at once" in text and 'role="alert"' in text
    big.seek(0)
    response = client.post(f"/api/projects/{S}/imports/", {"batch": "b", "files": big})
    assert response.status_code == 413
    assert "IMPORT_MAX_UPLOAD_MB" in response.json()["detail"]
    assert not ImportJob.objects.exists()


def test_files_over_the_limit_without_a_content_length_are_refused_too(settings):
    # A chunked request has no Content-Length for the guard to read: the upload service counts the files.
    settings.IMPORT_MAX_UPLOAD_MB = 1
    with pytest.raises(UploadTooLarge, match=r"The upload is 1\.5 MB; at most 1 MB"):
        check_upload_request(
            "b", "", [file("a.jsonl", b"x" * (1024 * 1024)), file("b.jsonl", b"y" * 512 * 1024)]
        )


def test_the_upload_page_states_the_limit(client, owner, project, settings):
    settings.IMPORT_MAX_UPLOAD_MB = 7
    client.force_login(owner)
    page = client.get(f"/p/{S}/import/").content.decode()
    assert 'data-max-upload-mb="7"' in page and "up to 7 MB per import" in page


def test_infinite_numbers_in_json_bodies_are_400_not_500(
    client, project, trace, slot, annotator_a, adjudicator
):
    # JSON allows 1e999, which Python reads as infinity: int() of it raised OverflowError, a 500.
    from annotator.models import AdjudicationItem

    client.force_login(annotator_a)
    body = '{"version": 1e999, "labels": []}'
    url = f"/api/projects/{S}/assignments/{slot.pk}/annotation/"
    assert client.put(url, body, content_type="application/json").status_code == 400
    item = AdjudicationItem.objects.create(project=project, trace=trace, status="open")
    client.force_login(adjudicator)
    base = f"/api/projects/{S}/adjudication/{item.pk}"
    for tail, payload in (
        ("decide/", '{"version": 1e999, "decisions": []}'),
        ("decide/", '{"version": 1, "decisions": [{"mode": "FM-1.1", "choice": "a", "steps": [1e999]}]}'),
        ("reopen/", '{"version": 1e999}'),
    ):
        response = client.post(f"{base}/{tail}", payload, content_type="application/json")
        assert 400 <= response.status_code < 500, (tail, payload, response.status_code)


def test_deeply_nested_json_in_a_form_field_is_a_400_not_a_recursion_error(client, annotator_a, slot):
    client.force_login(annotator_a)
    deep = "[" * 50_000 + "]" * 50_000
    response = client.post(
        f"/p/{S}/a/{slot.pk}/save/", {"version": "0", "labels": ["FM-1.1"], "evidence:FM-1.1": deep}
    )
    assert 400 <= response.status_code < 500


def test_label_files_and_taxonomy_files_have_the_same_depth_bound(tmp_path):
    import io

    from annotator.label_formats import parse_annotations_jsonl
    from taxonomy.schema import TaxonomyFileError, load_taxonomy_file
    from traces.importers.records import TraceFormatError

    deep = "[" * 100_000 + "]" * 100_000
    body = f'{{"trace": "t1", "annotator": "x", "labels": []}}\n{{"trace": "t2", "labels": {deep}}}\n'
    with pytest.raises(TraceFormatError, match=r"^labels\.jsonl, line 2: nested deeper than 100 levels"):
        list(parse_annotations_jsonl(io.BytesIO(body.encode()), "labels.jsonl"))
    for name in ("deep.json", "deep.yaml"):
        path = tmp_path / name
        path.write_text('{"slug": ' + deep + "}")
        with pytest.raises(TaxonomyFileError, match="nested too deeply"):
            load_taxonomy_file(path)


def test_a_form_with_too_many_fields_is_a_400_in_the_api_error_shape(client, owner, project, settings):
    """Past DATA_UPLOAD_MAX_NUMBER_FIELDS Django raised TooManyFieldsSent: the API answered its bare HTML 400
    page (in the middleware, for a POST) or the error went unanswered by DRF (a PATCH form it parses)."""
    from urllib.parse import urlencode

    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    client.force_login(owner)
    body = urlencode([("batches", f"b{n}") for n in range(20)])
    form = "application/x-www-form-urlencoded"
    posted = client.post("/api/projects/", body, content_type=form)
    patched = client.patch(f"/api/projects/{project.slug}/settings/", body, content_type=form)
    for response in (posted, patched):
        assert response.status_code == 400 and response["Content-Type"] == "application/json"
        assert response.json() == {
            "detail": "The request sends too many fields (DATA_UPLOAD_MAX_NUMBER_FIELDS)."
        }
    page = client.post(f"/p/{project.slug}/settings/", body, content_type=form)
    assert page.status_code == 400 and b"too many fields" in page.content
