"""What a daily user trips over: own error pages, a fresh labelling page after Back, the trace's own id,
step numbering, "13 of 70", leaving a trace (keep or release), no empty boxes, the one-rater report."""

from __future__ import annotations

import json

import pytest

from annotator.models import AdjudicationItem, Assignment
from annotator.services.assignment import do_assign, do_claim_next
from tests.factories import BatchFactory, StepFactory, trace_with_steps
from tests.labels import project_trace, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(project, annotator_a):
    """Three traces of 24 steps for ana (and ben), ana's first one opened."""
    batch = BatchFactory(name="b1")
    project.batches.add(batch)
    traces = [trace_with_steps(24, batch=batch, external_id=f"run-{k}") for k in range(3)]
    do_assign(project)
    return traces, do_claim_next(project, annotator_a)


def page_of(client, project, assignment):
    return client.get(f"/p/{project.slug}/a/{assignment.pk}/")


def test_it_shows_our_404_with_navigation_and_no_url_list(client, annotator_a):
    client.force_login(annotator_a)
    response = client.get("/p/no-such-project/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Nothing here" in html and 'href="/"' in html and "No such project." in html
    assert "urlpatterns" not in html and "Using the URLconf" not in html


def test_it_shows_our_403_with_the_reason(client, project, annotator_a):
    client.force_login(annotator_a)
    response = client.get(f"/p/{project.slug}/export/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "data-error-message" in html and "Your role in this project does not allow this." in html


def test_an_error_page_never_shows_a_server_path():
    from django.http import Http404
    from django.test import RequestFactory

    from annotator.views.errors import not_found, server_error

    request = RequestFactory().get("/x/")
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    html = not_found(request, Http404("/srv/app/var/uploads/abc/000-x.jsonl missing")).content.decode()
    assert "/srv/app" not in html and "There is nothing at this address." in html
    assert b"Something broke on our side" in server_error(request).content


def test_an_unknown_api_address_answers_in_the_api_error_shape(client, owner):
    from django.contrib.auth.models import AnonymousUser
    from django.test import RequestFactory

    from annotator.views.errors import server_error

    client.force_login(owner)
    response = client.get("/api/projects/no-such-project/nothing-here/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "There is nothing at this address."}
    request = RequestFactory().get("/api/projects/")
    request.user = AnonymousUser()
    crashed = server_error(request)
    assert crashed.status_code == 500 and "detail" in json.loads(crashed.content)


def test_the_labelling_page_is_never_served_from_the_cache(client, project, annotator_a, queue):
    client.force_login(annotator_a)
    response = page_of(client, project, queue[1])
    assert "no-store" in response["Cache-Control"]


def test_the_page_names_the_trace_by_its_own_id_and_counts_the_queue(client, project, annotator_a, queue):
    traces, assignment = queue
    submit(project, traces[1], annotator_a, {"FM-1.1": [0]})
    client.force_login(annotator_a)
    html = page_of(client, project, assignment).content.decode()
    crumbs = html.split('class="crumbs"')[1].split("</nav>")[0]
    assert assignment.trace.external_id in crumbs and f"Trace {assignment.trace_id}<" not in crumbs
    assert "2 of 3" in html  # one submitted, this one open
    assert "Steps <b>#0\u2013#23</b> · 24 steps" in html  # an en dash, as the page prints it
    assert f'data-step-count="{assignment.trace.step_count}"' in html


def test_submitting_says_the_traces_own_id(client, project, annotator_a, queue):
    _, assignment = queue
    client.force_login(annotator_a)
    response = client.post(
        f"/p/{project.slug}/a/{assignment.pk}/submit/", {"version": "0", "labels": ["FM-1.1"]}, follow=True
    )
    assert f"Submitted trace {assignment.trace.external_id}." in response.content.decode()


def test_leaving_a_trace_can_release_it_back_to_the_queue(client, project, annotator_a, queue):
    _, first = queue
    client.force_login(annotator_a)
    response = client.post(f"/p/{project.slug}/next/", {"current": first.pk, "then": "release"})
    first.refresh_from_db()
    assert first.reserved_until is None
    assert response.status_code == 302 and f"/a/{first.pk}/" not in response["Location"]


def test_leaving_a_trace_can_keep_it_reserved(client, project, annotator_a, queue):
    _, first = queue
    client.force_login(annotator_a)
    response = client.post(f"/p/{project.slug}/next/", {"current": first.pk, "then": "keep"})
    first.refresh_from_db()
    assert first.reserved_until is not None
    assert f"/a/{first.pk}/" not in response["Location"]


def test_release_touches_only_ones_own_slot(client, project, annotator_a, annotator_b, queue):
    others = do_claim_next(project, annotator_b)
    client.force_login(annotator_a)
    client.post(f"/p/{project.slug}/next/", {"current": others.pk, "then": "release"})
    others.refresh_from_db()
    assert others.reserved_until is not None


def test_g_and_the_mode_chips_are_explained(client, project, annotator_a, queue):
    client.force_login(annotator_a)
    html = page_of(client, project, queue[1]).content.decode()
    assert 'id="next-dialog"' in html and "Keep my draft" in html and "Release it" in html
    assert "mode 12" in html  # the help explains two-digit chords
    assert 'id="client-check"' in html and 'class="panel-foot"' in html


def test_a_tool_call_with_only_arguments_has_no_empty_body_box(client, project, annotator_a, queue):
    _, assignment = queue
    StepFactory(
        trace=assignment.trace, index=24, kind="tool_call", content="", tool_name="ls", tool_args='{"a": 1}'
    )
    client.force_login(annotator_a)
    html = client.get(f"/p/{project.slug}/t/{assignment.trace_id}/steps/?step=24", HTTP_HX_REQUEST="true")
    step = html.content.decode().split('id="step-24"')[1].split("</article>")[0]
    assert "Arguments" in step and 'class="body mono' not in step


def test_the_agreement_report_for_one_annotator_is_one_sentence(
    client, project, owner, annotator_a, annotator_b
):
    for _ in range(2):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        submit(project, trace, annotator_b, {"FM-1.2": [1]})
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/agreement/?annotators={annotator_a.username}").content.decode()
    assert "Agreement needs two raters" in html and annotator_a.username in html
    assert "undefined" not in html.split('id="agreement-report"')[1].split("</section>")[0]


def test_the_adjudication_page_has_its_own_keys_and_the_definitions(
    client, project, adjudicator, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    trace = project_trace(project)
    with django_capture_on_commit_callbacks(execute=True):  # the submit hook queues the disagreement
        submit(project, trace, annotator_a, {"FM-1.1": [1], "FM-3.3": [2]})
        submit(project, trace, annotator_b, {"FM-1.1": [1]})
    item = AdjudicationItem.objects.get(trace=trace)
    client.force_login(adjudicator)
    html = client.get(f"/p/{project.slug}/adjudication/{item.pk}/").content.decode()
    assert "Keyboard shortcuts: adjudication" in html and "Accept annotator A" in html
    assert "Toggle the mode with that number" not in html  # not the annotator's list
    assert 'data-definition="FM-3.3"' in html and "adjudicate.js" in html
    assert trace.external_id in html.split('class="crumbs"')[1].split("</nav>")[0]


def test_the_recent_imports_and_past_exports_refresh_with_the_job(client, project, owner):
    client.force_login(owner)
    imports = client.get(f"/p/{project.slug}/import/").content.decode()
    assert 'id="recent-imports"' in imports and 'hx-select="#recent-imports"' in imports
    exports = client.get(f"/p/{project.slug}/export/").content.decode()
    # The export form's answer and every poll of a job card carry the list out of band (test_views.py).
    assert 'id="past-exports"' in exports


def test_the_demo_banner_prints_the_served_address(monkeypatch, tmp_path, settings):
    from io import StringIO

    from django.core.management import call_command

    import annotator.management.commands.seed_demo as seed_demo

    monkeypatch.setattr(seed_demo, "do_seed_demo", lambda **kwargs: "seeded")
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", "8123")
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert "http://0.0.0.0:8123/" in out.getvalue()


def test_open_assignments_stay_listed_after_keep(client, project, annotator_a, queue):
    _, first = queue
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.IN_PROGRESS)
    client.force_login(annotator_a)
    client.post(f"/p/{project.slug}/next/", {"current": first.pk, "then": "keep"})
    html = client.get(f"/p/{project.slug}/").content.decode()
    assert first.trace.external_id in html


def test_import_errors_name_the_uploaded_file_never_the_server_path(tmp_path):
    from traces.services import ImportFailed, do_import_files

    stored = tmp_path / "uploads" / "0a1b2c" / "000-empty.jsonl"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(b"")
    unknown = tmp_path / "uploads" / "0a1b2c" / "001-notes.txt"
    unknown.write_text("just some words\n")
    with pytest.raises(ImportFailed) as failure:
        do_import_files([(stored, "empty.jsonl"), (unknown, "notes.txt")], batch_name="b")
    errors = [f.error for f in failure.value.result.files]
    assert errors[0].startswith("empty.jsonl") and "the file is empty" in errors[0]
    assert errors[1].startswith("notes.txt") and "the Format list" in errors[1]
    assert not any(str(tmp_path) in error for error in errors)


def test_a_stale_form_gets_our_403_in_plain_words(project, annotator_a, queue):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(annotator_a)
    response = client.post(f"/p/{project.slug}/next/", {})
    assert response.status_code == 403
    assert "This page is out of date" in response.content.decode()


def test_the_demo_shows_our_404_not_the_url_list(client, annotator_a, settings):
    settings.DEBUG = True  # `make run`
    client.force_login(annotator_a)
    for path in ("/no/such/address/", "/p/no-such-project/"):
        html = client.get(path).content.decode()
        assert "Nothing here" in html and "URLconf" not in html, path
    assert client.get("/api/projects/no-such-project/").headers["Content-Type"].startswith("application/json")
