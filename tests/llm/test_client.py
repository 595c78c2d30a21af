"""The HTTP client against a local chat-completions stand-in: retries, Retry-After, timeouts, rate limit."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.cache import cache

from annotator.llm.client import (
    ChatClient,
    Endpoint,
    LLMConfigError,
    LLMRejected,
    LLMUnavailable,
    RateLimiter,
    retry_after_seconds,
)
from tests.llm.fake_server import Reply, answer

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def client_for(server, clock, **options) -> ChatClient:
    endpoint = Endpoint(
        base_url=server.base_url,
        model="m",
        api_key=options.pop("api_key", "sk-k"),
        timeout=options.pop("timeout", 5),
    )
    # The stand-in on 127.0.0.1 is allowed the way an administrator allows a local server (see conftest).
    options.setdefault("allowed_base_urls", settings.LLM_ALLOWED_BASE_URLS)
    return ChatClient(endpoint, sleep=clock.sleep, clock=clock, **options)


def test_it_posts_the_chat_completion_and_reads_text_and_usage(chat_server, clock):
    chat_server.push(answer('{"modes": {}}', prompt_tokens=321, completion_tokens=9))
    with client_for(chat_server, clock) as client:
        completion = client.complete(MESSAGES)
    assert completion.text == '{"modes": {}}'
    assert (completion.prompt_tokens, completion.completion_tokens, completion.total_tokens) == (321, 9, 330)
    seen = chat_server.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == "Bearer sk-k"
    assert seen.body["model"] == "m" and seen.body["messages"] == MESSAGES
    assert seen.body["response_format"] == {"type": "json_object"}


def test_a_429_waits_what_retry_after_says_then_succeeds(chat_server, clock):
    chat_server.push(Reply(429, {"error": "slow down"}, headers={"Retry-After": "7"}), answer("ok"))
    with client_for(chat_server, clock) as client:
        assert client.complete(MESSAGES).text == "ok"
    assert clock.sleeps == [7.0]
    assert len(chat_server.requests) == 2


def test_5xx_are_retried_with_growing_backoff_and_finally_give_up(chat_server, clock):
    chat_server.push(Reply(503, {"error": "busy"}), Reply(502, "bad gateway"), answer("ok"))
    with client_for(chat_server, clock) as client:
        assert client.complete(MESSAGES).text == "ok"
    assert len(clock.sleeps) == 2 and clock.sleeps[1] > clock.sleeps[0] >= 2
    chat_server.push(*[Reply(500, {"error": "down"})] * 3)
    with (
        client_for(chat_server, clock, max_retries=2) as client,
        pytest.raises(LLMUnavailable, match="HTTP 500, still after 3 attempts"),
    ):
        client.complete(MESSAGES)


def test_a_timeout_is_retried_then_reported(chat_server, clock):
    chat_server.push(Reply(delay=1.0, body={"late": True}), answer("ok"))
    with client_for(chat_server, clock, timeout=0.3) as client:
        assert client.complete(MESSAGES).text == "ok"
    chat_server.push(Reply(delay=1.0, body={}), Reply(delay=1.0, body={}))
    with (
        client_for(chat_server, clock, timeout=0.3, max_retries=1) as client,
        pytest.raises(LLMUnavailable, match="timeout"),
    ):
        client.complete(MESSAGES)


def test_wrong_settings_stop_and_a_refused_request_fails_alone(chat_server, clock):
    chat_server.push(Reply(401, {"error": {"message": "Incorrect API key provided: sk-k"}}))
    with client_for(chat_server, clock) as client, pytest.raises(LLMConfigError) as error:
        client.complete(MESSAGES)
    assert "sk-k" not in str(error.value) and "HTTP 401" in str(error.value)
    chat_server.push(Reply(400, {"error": {"message": "context length exceeded"}}))
    with client_for(chat_server, clock) as client, pytest.raises(LLMRejected, match="prompt is too long"):
        client.complete(MESSAGES)
    assert clock.sleeps == []  # neither is retried


def test_a_server_without_json_mode_is_asked_again_without_it(chat_server, clock):
    chat_server.push(Reply(400, {"error": {"message": "response_format is not supported"}}), answer("ok"))
    with client_for(chat_server, clock) as client:
        assert client.complete(MESSAGES).text == "ok"
    assert "response_format" in chat_server.requests[0].body
    assert "response_format" not in chat_server.requests[1].body


def test_without_usage_tokens_are_estimated_so_the_cap_still_works(chat_server, clock):
    chat_server.push(answer("x" * 400, usage=False))
    with client_for(chat_server, clock, api_key="") as client:
        completion = client.complete(MESSAGES)
    assert completion.estimated and completion.completion_tokens == 101
    assert "Authorization" not in chat_server.requests[0].headers


def test_the_rate_limit_waits_for_the_next_window(clock):
    limiter = RateLimiter(f"test-{id(clock)}", 2, counter=cache, clock=clock, sleep=clock.sleep)
    clock.now = 6_000_000.0 + 15  # 15 s into a minute
    limiter.acquire()
    limiter.acquire()
    assert clock.sleeps == []
    limiter.acquire()  # the third request of the minute waits for the next one
    assert clock.sleeps == [45.0]


def test_retry_after_accepts_seconds_and_http_dates():
    assert retry_after_seconds("12", now=0) == 12.0
    assert retry_after_seconds("Thu, 01 Jan 1970 00:01:40 GMT", now=40.0) == 60.0
    assert retry_after_seconds("soon", now=0) is None
    assert retry_after_seconds("99999", now=0) == 300.0
