"""Issue 11, point 1: a project owner cannot make the worker send an environment variable to a server of their
choice, nor make it call (and read) an internal address; the settings page is no probe of the environment."""

from __future__ import annotations

import httpx
import pytest

from annotator.llm.client import ChatClient, Endpoint, LLMConfigError
from annotator.llm.urlguard import UnsafeBaseURL, check_base_url, is_allowed_prefix, pinned_target
from annotator.models import LLMConfig, LLMRun
from annotator.services.llm.config import do_store_key
from annotator.services.llm.runs import LLMRunError, do_process_run, do_start_run
from tests.llm.fake_server import Reply, answer

HX = {"HTTP_HX_REQUEST": "true"}
WORKER_SECRET = "postgres://admin:hunter2@db/prod"


def settings_form(**changes) -> dict:
    data = {"base_url": "https://api.openai.com/v1", "model": "m", "api_key_env": "", "temperature": "0",
            "max_tokens": "512", "requests_per_minute": "30", "token_cap": "1000", "timeout_seconds": "30",
            "max_trace_chars": "50000", "long_traces": "windows", "window_overlap_steps": "2"}  # fmt: skip
    return {**data, **changes}


def fixed(*addresses: str):
    """A resolver answering `addresses` for every host (no network in tests)."""
    return lambda host, port: list(addresses)


@pytest.fixture
def public_dns(monkeypatch):
    """Every host resolves to a public address (documentation ranges are not global: use a real one)."""
    monkeypatch.setattr("annotator.llm.urlguard.resolve", fixed("93.184.215.14"))


def test_an_owner_cannot_name_an_arbitrary_environment_variable(client, project, owner, public_dns):
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/llm/config/", settings_form(api_key_env="DATABASE_URL"), **HX)
    assert response.status_code == 422 and "Select a valid choice" in response.content.decode()
    assert LLMConfig.objects.get(project=project).api_key_env == ""


def test_a_variable_the_administrator_did_not_list_is_never_sent(
    project, owner, traces, llm_config, chat_server, clock, monkeypatch
):
    # A row saved before the rule (or written by hand) names a worker secret: the worker sends no key.
    monkeypatch.setenv("WORKER_DATABASE_URL", WORKER_SECRET)
    LLMConfig.objects.filter(pk=llm_config.pk).update(api_key_env="WORKER_DATABASE_URL")
    chat_server.push(*[answer({"modes": {}}) for _ in traces])
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    do_process_run(run.pk, sleep=clock.sleep, clock=clock)
    assert chat_server.requests and all("Authorization" not in seen.headers for seen in chat_server.requests)


def test_a_listed_variable_is_sent_and_one_bound_to_another_url_is_not(
    project, traces, llm_config, chat_server, clock, monkeypatch, settings
):
    monkeypatch.setenv("TEAM_LLM_KEY", "sk-team")
    LLMConfig.objects.filter(pk=llm_config.pk).update(api_key_env="TEAM_LLM_KEY")
    settings.LLM_KEY_ENVS = ["TEAM_LLM_KEY"]
    chat_server.push(*[answer({"modes": {}}) for _ in traces])
    do_process_run(
        do_start_run(project, batch_name="run-1", enqueue=False).pk, sleep=clock.sleep, clock=clock
    )
    assert chat_server.requests[0].headers["Authorization"] == "Bearer sk-team"
    settings.LLM_KEY_ENVS = ["TEAM_LLM_KEY=https://api.openai.com/"]
    assert LLMConfig.objects.get(pk=llm_config.pk).api_key() == ""


def test_the_page_does_not_tell_whether_an_unlisted_variable_is_set(client, project, owner, monkeypatch):
    LLMConfig.objects.create(project=project, api_key_env="SOME_VARIABLE")
    client.force_login(owner)
    monkeypatch.delenv("SOME_VARIABLE", raising=False)
    unset = key_source(client.get(f"/p/{project.slug}/llm/").content.decode())
    monkeypatch.setenv("SOME_VARIABLE", "x")
    assert key_source(client.get(f"/p/{project.slug}/llm/").content.decode()) == unset
    assert "not one of the key variables the administrator allows" in unset


def key_source(html: str) -> str:
    return html.split('id="llm-key-source">', 1)[1].split("</b>", 1)[0]


@pytest.mark.parametrize(
    "url, addresses",
    [
        ("http://127.0.0.1:5432/v1", ["127.0.0.1"]),
        ("http://metadata.internal/v1", ["169.254.169.254"]),
        ("http://redis.internal:6379", ["10.0.0.7"]),
        ("https://rebind.example.org/v1", ["93.184.215.14", "192.168.1.10"]),  # one private answer is enough
        ("http://[::1]:8000/v1", ["::1"]),
        ("http://mapped.example.org/v1", ["::ffff:127.0.0.1"]),
        ("http://zero.example.org/v1", ["0.0.0.0"]),
    ],
)
def test_base_urls_resolving_to_non_public_addresses_are_refused(url, addresses):
    with pytest.raises(UnsafeBaseURL, match="LLM_ALLOWED_BASE_URLS"):
        check_base_url(url, [], resolver=fixed(*addresses))


def test_unresolvable_hosts_and_credentials_in_the_url_are_refused():
    def nowhere(host, port):
        raise OSError("no such host")

    with pytest.raises(UnsafeBaseURL, match="cannot be resolved"):
        check_base_url("https://nowhere.example.org/v1", [], resolver=nowhere)
    with pytest.raises(UnsafeBaseURL, match="user name or password"):
        check_base_url("https://u:p@api.example.org/v1", [], resolver=fixed("93.184.215.14"))


def test_allowed_prefixes_match_at_a_boundary_only():
    allowed = ["http://vllm:8000", "http://127.0.0.1:11434/v1"]
    assert is_allowed_prefix("http://vllm:8000/v1", allowed)
    assert is_allowed_prefix("http://127.0.0.1:11434/v1", allowed)
    assert not is_allowed_prefix("http://vllm:80001/v1", allowed)
    assert not is_allowed_prefix("http://vllm:8000.attacker.example/v1", allowed)
    assert not is_allowed_prefix("http://127.0.0.1:11434/v10", allowed)
    check_base_url("http://vllm:8000/v1", allowed, resolver=fixed("10.0.0.7"))  # allowed: no error


def test_saving_refuses_an_internal_base_url_unless_the_administrator_allows_it(
    client, project, owner, settings
):
    client.force_login(owner)
    form = settings_form(base_url="http://127.0.0.1:6379/v1")
    response = client.post(f"/p/{project.slug}/llm/config/", form, **HX)
    assert response.status_code == 422 and "private, loopback or link-local" in response.content.decode()
    settings.LLM_ALLOWED_BASE_URLS = ["http://127.0.0.1:6379/v1"]
    assert client.post(f"/p/{project.slug}/llm/config/", form, **HX).status_code == 200
    assert LLMConfig.objects.get(project=project).base_url == "http://127.0.0.1:6379/v1"


def test_the_worker_checks_again_before_each_request(
    project, traces, llm_config, chat_server, clock, settings
):
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    settings.LLM_ALLOWED_BASE_URLS = []  # the allowance is withdrawn (or the name now resolves elsewhere)
    do_process_run(run.pk, sleep=clock.sleep, clock=clock)
    run.refresh_from_db()
    assert run.status == LLMRun.Status.FAILED and "private, loopback or link-local" in run.error
    assert chat_server.requests == []


def test_a_run_cannot_start_on_a_refused_base_url(project, traces, llm_config, settings):
    settings.LLM_ALLOWED_BASE_URLS = []
    with pytest.raises(LLMRunError, match="Fix the base URL"):
        do_start_run(project, batch_name="run-1", enqueue=False)


def test_the_connection_goes_to_the_address_that_was_checked():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    endpoint = Endpoint(base_url="https://api.example.org/v1", model="m")
    client = ChatClient(endpoint, transport=httpx.MockTransport(handler), resolver=fixed("93.184.215.14"))
    assert client.complete([{"role": "user", "content": "u"}]).text == "ok"
    request = seen[0]
    assert str(request.url) == "https://93.184.215.14/v1/chat/completions"
    assert request.headers["Host"] == "api.example.org"
    assert request.extensions["sni_hostname"] == "api.example.org"
    target = pinned_target("http://[2606:2800::1]:8080/v1", [], resolver=fixed("2606:2800:21f:cb07::1"))
    assert (
        target.url == "http://[2606:2800:21f:cb07::1]:8080/v1"
        and target.headers["Host"] == "[2606:2800::1]:8080"
    )


def test_a_rebinding_name_is_refused_at_request_time():
    endpoint = Endpoint(base_url="https://rebind.example.org/v1", model="m")
    client = ChatClient(
        endpoint, transport=httpx.MockTransport(lambda r: httpx.Response(200)), resolver=fixed("10.1.2.3")
    )
    with pytest.raises(LLMConfigError, match="private"):
        client.complete([{"role": "user", "content": "u"}])


def test_a_changed_base_url_forgets_the_stored_key(client, project, owner, public_dns):
    client.force_login(owner)
    client.post(f"/p/{project.slug}/llm/config/", settings_form(), **HX)
    do_store_key(project, "sk-owner-key", actor=owner)
    same = client.post(f"/p/{project.slug}/llm/config/", settings_form(temperature="0.5"), **HX)
    assert same.status_code == 200 and LLMConfig.objects.get(project=project).has_stored_key
    moved = client.post(
        f"/p/{project.slug}/llm/config/", settings_form(base_url="https://evil.example.org/v1"), **HX
    )
    assert "stored API key was removed" in moved.content.decode()
    config = LLMConfig.objects.get(project=project)
    assert not config.has_stored_key and config.api_key() == ""


def test_run_errors_never_echo_the_response_body(project, traces, llm_config, chat_server, clock):
    internal = "<html>internal admin console: 42 users, token=abc</html>"
    chat_server.push(Reply(404, internal))
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    do_process_run(run.pk, sleep=clock.sleep, clock=clock)
    run.refresh_from_db()
    assert run.status == LLMRun.Status.FAILED and "HTTP 404" in run.error and "internal" not in run.error
    chat_server.push(Reply(422, internal), Reply(200, internal), answer({"modes": {}}))
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    do_process_run(run.pk, sleep=clock.sleep, clock=clock)
    errors = " ".join(run.results.values_list("error", flat=True))
    assert "HTTP 422" in errors and "HTTP 200" in errors and "admin console" not in errors


def test_a_run_started_on_another_url_never_gets_the_key_stored_for_the_new_one(
    project, owner, traces, llm_config, chat_server, clock
):
    run = do_start_run(project, batch_name="run-1", enqueue=False)  # records the fake server's URL
    LLMConfig.objects.filter(pk=llm_config.pk).update(base_url="https://api.openai.com/v1")
    do_store_key(project, "sk-for-openai", actor=owner)
    chat_server.push(*[answer({"modes": {}}) for _ in traces])
    do_process_run(run.pk, sleep=clock.sleep, clock=clock)
    assert chat_server.requests and all("Authorization" not in seen.headers for seen in chat_server.requests)
