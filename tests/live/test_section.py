"""The live section of the project page: setup, ingest token shown once, assignment choice, last spans."""

from __future__ import annotations

import re

from django.test import Client
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from annotator.live import otlp
from annotator.live.service import do_accept_spans
from annotator.models import ApiToken, LiveSettings
from tests.live import agent_run

HTMX = {"HTTP_HX_REQUEST": "true"}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_project_page_loads_the_live_section_for_owners_only(project, owner, annotator_a):
    assert "project-live" not in _client(annotator_a).get(f"/p/{project.slug}/").content.decode()
    page = _client(owner).get(f"/p/{project.slug}/").content.decode()
    assert f"/p/{project.slug}/live/" in page


def test_it_shows_the_endpoint_and_how_to_set_the_exporter(project, owner):
    response = _client(owner).get(f"/p/{project.slug}/live/", **HTMX)

    body = response.content.decode()
    assert response.status_code == 200
    assert f"http://testserver/api/projects/{project.slug}/otlp/v1/traces" in body
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" in body
    assert "OTEL_EXPORTER_OTLP_HEADERS" in body
    assert "<html" not in body  # the fragment, for htmx


def test_an_owner_creates_an_ingest_token_shown_once(project, owner):
    client = _client(owner)
    response = client.post(f"/p/{project.slug}/live/token/", {"name": "prod agents"}, **HTMX)

    key = re.search(r"<code data-token>([^<]+)</code>", response.content.decode()).group(1)
    token = ApiToken.objects.get(project=project)
    assert token.is_ingest and token.name == "prod agents"
    assert token.allows_route("api-otlp-traces", project.slug)
    assert key not in client.get(f"/p/{project.slug}/live/", **HTMX).content.decode()
    sent = Client().post(
        f"/api/projects/{project.slug}/otlp/v1/traces",
        encode_spans(agent_run.record_run()).SerializeToString(),
        content_type=otlp.PROTOBUF,
        HTTP_AUTHORIZATION=f"Token {key}",
    )
    assert sent.status_code == 200


def test_members_who_are_not_owners_cannot_create_tokens(project, annotator_a, outsider):
    assert _client(annotator_a).post(f"/p/{project.slug}/live/token/", **HTMX).status_code == 403
    assert _client(outsider).post(f"/p/{project.slug}/live/token/", **HTMX).status_code == 404
    assert not ApiToken.objects.filter(project=project).exists()


def test_the_assignment_choice_is_saved_and_a_bad_one_is_explained(project, owner):
    client = _client(owner)
    saved = client.post(
        f"/p/{project.slug}/live/settings/", {"assign": "sample", "sample_rate": "0.25"}, **HTMX
    )
    assert "Saved" in saved.content.decode()
    assert (LiveSettings.objects.get(project=project).assign, project.live_settings.sample_rate) == (
        "sample",
        0.25,
    )

    wrong = client.post(f"/p/{project.slug}/live/settings/", {"assign": "all", "sample_rate": "7"}, **HTMX)
    assert wrong.status_code == 200
    assert "between 0 and 1" in wrong.content.decode()
    assert LiveSettings.objects.get(project=project).assign == "sample"


def test_the_last_spans_received_and_late_spans_are_listed(project, owner):
    run = agent_run.record_run()
    do_accept_spans(project, otlp.parse_traces(encode_spans(run).SerializeToString(), otlp.PROTOBUF))

    body = _client(owner).get(f"/p/{project.slug}/live/spans/", **HTMX).content.decode()

    assert "travel-agent" in body and agent_run.TOOL in body
    assert f"{run[0].context.trace_id:032x}" in body
    assert "Part of a stored trace" in body


def test_span_names_are_escaped(project, owner):
    request = encode_spans(agent_run.record_run())
    request.resource_spans[0].scope_spans[0].spans[0].name = "<script>alert(1)</script>"
    do_accept_spans(project, otlp.parse_traces(request.SerializeToString(), otlp.PROTOBUF))

    body = _client(owner).get(f"/p/{project.slug}/live/spans/", **HTMX).content.decode()

    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;" in body


def test_the_trace_list_marks_live_traces_with_their_arrival_time(project, owner):
    request = encode_spans(agent_run.record_run())
    do_accept_spans(project, otlp.parse_traces(request.SerializeToString(), otlp.PROTOBUF))

    body = _client(owner).get(f"/p/{project.slug}/traces/").content.decode()

    assert 'class="pill live"' in body
    assert project.live_traces.get().first_received_at.strftime("%Y-%m-%d %H:%M") in body
