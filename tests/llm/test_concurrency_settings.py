"""The concurrency setting on the LLM page and in the API (1 to 64, refused with the range otherwise), the
shared pause and the cancel of the HTTP client, and the time-left estimate."""

from __future__ import annotations

import threading

import pytest
from django.core.cache import cache
from django.db import IntegrityError

from annotator.llm.client import ChatClient, Endpoint, LLMCancelled, RateLimiter
from annotator.llm.pace import describe, seconds_left
from annotator.models import LLMConfig
from annotator.services.llm.runs import do_start_run
from tests.llm.fake_server import answer

HX = {"HTTP_HX_REQUEST": "true"}


def form(config: LLMConfig, **changes) -> dict:
    fields = (
        "base_url",
        "model",
        "temperature",
        "max_tokens",
        "requests_per_minute",
        "token_cap",
        "long_traces",
    )
    data = {name: getattr(config, name) for name in fields}
    data.update(
        timeout_seconds=30, max_trace_chars=50_000, window_overlap_steps=2, json_mode="on", api_key_env=""
    )
    return {**data, **changes}


@pytest.mark.parametrize("value", [0, 65])
def test_the_page_refuses_a_concurrency_outside_1_to_64_and_says_the_range(
    client, project, owner, llm_config, value
):
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/llm/config/", form(llm_config, concurrency=value), **HX)
    assert response.status_code == 422 and "From 1 to 64 requests at once" in response.content.decode()
    assert LLMConfig.objects.get(pk=llm_config.pk).concurrency == 1


def test_the_page_shows_and_saves_the_concurrency(client, project, owner, llm_config, batch):
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/llm/").content.decode()
    assert "Requests in flight at once" in html and 'name="concurrency"' in html and 'max="64"' in html
    response = client.post(f"/p/{project.slug}/llm/config/", form(llm_config, concurrency=16), **HX)
    assert response.status_code == 200 and LLMConfig.objects.get(pk=llm_config.pk).concurrency == 16
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    assert run.endpoint["concurrency"] == 16  # what the run used is recorded


@pytest.mark.parametrize("value", [0, 65])
def test_the_api_refuses_a_concurrency_outside_1_to_64(client, project, owner, llm_config, value):
    client.force_login(owner)
    response = client.patch(
        f"/api/projects/{project.slug}/llm-settings/", {"concurrency": value}, content_type="application/json"
    )
    assert response.status_code == 400 and "concurrency" in response.json()["detail"]
    assert LLMConfig.objects.get(pk=llm_config.pk).concurrency == 1


def test_the_api_reads_and_changes_the_concurrency(client, project, owner, llm_config):
    client.force_login(owner)
    url = f"/api/projects/{project.slug}/llm-settings/"
    assert client.get(url).json()["concurrency"] == 1
    changed = client.patch(url, {"concurrency": 32}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["concurrency"] == 32
    assert (
        client.patch(url, {"temperature": 0.1}, content_type="application/json").json()["concurrency"] == 32
    )


def test_the_database_refuses_a_concurrency_out_of_range(project):
    with pytest.raises(IntegrityError):
        LLMConfig.objects.create(project=project, concurrency=65)


def test_a_pause_set_by_one_worker_holds_every_other(clock):
    """Two limiters of one endpoint (two threads, or two workers sharing the cache): one hears Retry-After,
    the other waits for it before sending."""
    key = f"pause-{id(clock)}"
    heard = RateLimiter(key, 100, counter=cache, clock=clock, sleep=clock.sleep)
    other = RateLimiter(key, 100, counter=cache, clock=clock, sleep=clock.sleep)
    heard.pause(30)
    heard.pause(5)  # a shorter pause never shortens one in force
    other.acquire()
    assert clock.sleeps == [30.0]
    other.acquire()  # the pause is over
    assert clock.sleeps == [30.0]


def test_a_cancelled_client_sends_nothing_more_and_its_waits_end_at_once(chat_server, settings):
    endpoint = Endpoint(base_url=chat_server.base_url, model="m")
    cancelled = threading.Event()
    limiter = RateLimiter(f"cancel-{id(cancelled)}", 100, counter=cache)
    limiter.pause(300)  # a real wait of five minutes, unless the cancel ends it
    with ChatClient(endpoint, limiter=limiter, allowed_base_urls=settings.LLM_ALLOWED_BASE_URLS) as client:
        waiting = threading.Thread(target=lambda: client.cancel(), daemon=True)
        waiting.start()
        with pytest.raises(LLMCancelled):
            client.complete([{"role": "user", "content": "u"}])
        waiting.join()
        chat_server.push(answer("ok"))
        with pytest.raises(LLMCancelled):
            client.complete([{"role": "user", "content": "u"}])
    assert chat_server.requests == []


def test_the_time_left_follows_the_pace_so_far():
    assert seconds_left(processed=10, elapsed=20.0, remaining=30) == 60.0
    assert seconds_left(processed=0, elapsed=20.0, remaining=30) is None  # nothing back yet
    assert seconds_left(processed=10, elapsed=20.0, remaining=0) == 0.0
    assert [describe(s) for s in (None, 30, 61, 3_600, 7_500)] == [
        "estimating",
        "under a minute",
        "about 2 min",
        "about 1 h",
        "about 2 h 5 min",
    ]


class ForgetfulCache:
    """A cache that is down (annotator.cache answers misses and keeps nothing)."""

    def add(self, key, value, timeout):
        return True

    def incr(self, key, delta=1):
        return 1

    def get(self, key, default=None):
        return default

    def set(self, key, value, timeout):
        return None


def test_with_the_cache_down_a_retry_after_is_still_waited_for_by_the_thread_that_heard_it(
    chat_server, clock, settings
):
    from tests.llm.fake_server import Reply

    endpoint = Endpoint(base_url=chat_server.base_url, model="m")
    limiter = RateLimiter("down", 100, counter=ForgetfulCache(), clock=clock, sleep=clock.sleep)
    chat_server.push(Reply(429, {"error": "rate"}, headers={"Retry-After": "12"}), answer("ok"))
    with ChatClient(
        endpoint,
        limiter=limiter,
        sleep=clock.sleep,
        clock=clock,
        allowed_base_urls=settings.LLM_ALLOWED_BASE_URLS,
    ) as client:
        assert client.complete([{"role": "user", "content": "u"}]).text == "ok"
    assert clock.sleeps == [12.0]
