"""A small OpenAI-compatible chat-completions client (httpx) with the policies a long labelling run needs.

- Retries only what retrying can fix: 429 (waiting what Retry-After says), 5xx, timeouts and dropped
  connections, with exponential backoff; a 401/403/404 means the settings are wrong (LLMConfigError: the run
  stops), any other 4xx concerns this request only (LLMRejected: the trace fails, the run goes on).
- A request rate shared by every worker: a fixed one-minute window counted in the Django cache (Redis in a
  team install; per process with the local-memory cache of an eager demo), keyed by the project's settings.
- A pause shared the same way: a 429 or 503 with Retry-After sets a "not before" time beside the rate counter,
  and every thread and worker of that endpoint waits for it before sending (one thread's 429 slows the whole
  run, instead of the other threads hammering a server that asked for quiet).
- `cancel()` stops a client between requests: no new attempt is sent and waits end early (LLMCancelled);
  a request already on the wire is answered normally. A run's stop button uses it.
- `sleep` and `clock` are injectable, so tests exercise backoff and Retry-After without waiting.
- The API key lives only in the request headers: it is never logged, and error texts that echo it are
  redacted before they can reach a log line, a result row or an API response.
- Errors never carry the response body (only the status and a plain reason): a base URL pointing somewhere it
  should not must not turn the run's error into a window on that answer.
- Before every request the base URL is checked again (annotator.llm.urlguard: public hosts only, unless an
  allowed prefix) and the connection goes to the address that passed the check.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from annotator.llm.urlguard import Resolver, UnsafeBaseURL, pinned_target

log = logging.getLogger(__name__)

RETRY_AFTER_LIMIT = 300.0
BACKOFF_BASE = 2.0
BACKOFF_LIMIT = 60.0
WINDOW = 60.0
CHARS_PER_TOKEN = 4


def estimate_tokens(chars: int) -> int:
    """About how many tokens `chars` characters make (4 a token, rounded up by one): what the client books
    for an answer without `usage`, and what the run estimate counts, so both speak of the same tokens."""
    return chars // CHARS_PER_TOKEN + 1


def message_chars(messages: Sequence[dict[str, str]]) -> int:
    """The characters of the messages' contents (roles and JSON framing left out)."""
    return sum(len(message.get("content", "")) for message in messages)


class LLMError(Exception):
    """Base of the client's errors; messages are safe to show (no key)."""


class LLMUnavailable(LLMError):
    """Transient trouble (rate limit, 5xx, timeout, connection) that outlasted every retry."""


class LLMRejected(LLMError):
    """The endpoint refused this request (a 4xx other than 429): retrying the same request will not help."""


class LLMConfigError(LLMError):
    """The endpoint refuses the settings themselves (wrong key, model or URL): every request would fail."""


class LLMCancelled(Exception):
    """The client was cancelled before this attempt was sent. Not an LLMError: the trace has no outcome
    (nothing was answered), so a run leaves it pending for a resume instead of recording a failure."""


class Counter(Protocol):
    """The shared store (Django's cache): counters for the rate, one value for the pause."""

    def add(self, key: str, value: int, timeout: float) -> bool: ...
    def incr(self, key: str, delta: int = 1) -> int: ...
    def get(self, key: str, default: Any = None) -> Any: ...
    def set(self, key: str, value: Any, timeout: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    estimated: bool = False  # the server sent no `usage`: tokens estimated by `estimate_tokens`


@dataclass(slots=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout: float = 120.0
    json_mode: bool = True
    requests_per_minute: int = 60

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def pause_key(key: str) -> str:
    """The cache key holding the "not before" time of the endpoint keyed `key`."""
    return f"llm-pause:{key}"


class RateLimiter:
    """At most `per_minute` requests per clock minute for `key`, across every process sharing `counter`, and
    none before a pause the endpoint asked for (`pause`) has passed."""

    def __init__(
        self,
        key: str,
        per_minute: int,
        *,
        counter: Counter,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] | None = None,
    ):
        # `sleep` None: time.sleep, or waiting on the `cancelled` event given to acquire (a cancel ends it).
        self.key, self.per_minute, self.counter, self.clock, self.sleep = (
            key,
            per_minute,
            counter,
            clock,
            sleep,
        )

    def _pause_key(self) -> str:
        return pause_key(self.key)

    def pause(self, seconds: float) -> bool:
        """No request for `key` before `seconds` from now, in every thread and worker. Read-then-write: two
        threads pausing at once may keep the shorter of two nearly equal pauses, which is harmless. False
        when the store did not keep it (the cache is down): the caller then waits by itself."""
        until = self.clock() + seconds
        if until > self.not_before():
            self.counter.set(self._pause_key(), until, timeout=seconds + WINDOW)
        return self.not_before() >= until

    def not_before(self) -> float:
        value = self.counter.get(self._pause_key())
        return float(value) if isinstance(value, int | float) else 0.0

    def acquire(self, cancelled: threading.Event | None = None) -> None:
        """Wait for any shared pause, then for a place in the minute's rate. `cancelled`: raise
        LLMCancelled instead of sending once it is set (checked after every wait)."""
        sleep = self.sleep or (cancelled.wait if cancelled is not None else time.sleep)
        while True:
            if cancelled is not None and cancelled.is_set():
                raise LLMCancelled("cancelled while waiting to send")
            now = self.clock()
            paused = self.not_before() - now
            if paused > 0:
                log.info("LLM endpoint asked for a pause; waiting %.1fs", paused)
                sleep(paused)
                continue
            window = math.floor(now / WINDOW)
            name = f"llm-rpm:{self.key}:{window}"
            self.counter.add(name, 0, timeout=2 * WINDOW)
            try:
                count = self.counter.incr(name)
            except ValueError:  # expired between add and incr: take the next round
                continue
            if count <= self.per_minute:
                return
            wait = (window + 1) * WINDOW - now
            log.info("LLM rate limit %s/min reached; waiting %.1fs", self.per_minute, wait)
            sleep(max(wait, 0.01))
            if cancelled is not None and cancelled.is_set():
                raise LLMCancelled("cancelled while waiting to send")


def retry_after_seconds(value: str | None, *, now: float) -> float | None:
    """Retry-After as seconds (a number, or an HTTP date), capped; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), RETRY_AFTER_LIMIT)


class ChatClient:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        limiter: RateLimiter | None = None,
        max_retries: int = 4,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.time,
        transport: httpx.BaseTransport | None = None,
        allowed_base_urls: Sequence[str] = (),
        resolver: Resolver | None = None,
    ):
        self.endpoint = endpoint
        self.allowed_base_urls = tuple(allowed_base_urls)
        self.resolver = resolver
        self.limiter = limiter
        self.max_retries = max_retries
        self.cancelled = threading.Event()
        # Waiting on the event: a cancel ends a backoff or Retry-After wait at once.
        self.sleep = sleep or self.cancelled.wait
        self.clock = clock
        self.json_mode = endpoint.json_mode
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self._http = httpx.Client(
            timeout=httpx.Timeout(endpoint.timeout),
            headers=headers,
            # An explicit transport: httpx then ignores HTTP(S)_PROXY (a proxy would resolve the host itself and
            # defeat the address check) but still honours SSL_CERT_FILE / SSL_CERT_DIR.
            transport=transport or httpx.HTTPTransport(),
            follow_redirects=False,
        )

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def cancel(self) -> None:
        """Send nothing more: attempts not yet sent raise LLMCancelled (in every thread using this client)."""
        self.cancelled.set()

    def redact(self, text: str) -> str:
        key = self.endpoint.api_key
        return text.replace(key, "[redacted]") if key and len(key) >= 4 else text

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "temperature": self.endpoint.temperature,
            "max_tokens": self.endpoint.max_tokens,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def _backoff(self, attempt: int) -> float:
        delay = min(BACKOFF_LIMIT, BACKOFF_BASE * 2**attempt)
        return delay + random.uniform(0, delay / 4)  # jitter spreads workers apart

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """One answer; retries transient failures per the module's policy, else raises an LLMError."""
        return self._send(
            self.endpoint.url,
            lambda: self._body(messages),
            lambda r: self._completion(r, messages),
            self.endpoint.model,
        )

    def embed(self, texts: Sequence[str], model: str) -> Embeddings:
        """Vectors for `texts` from the endpoint's /embeddings (OpenAI format), in order; the same policies
        as `complete` (rate limit, pauses, retries, cancel, the URL check)."""
        url = self.endpoint.base_url.rstrip("/") + "/embeddings"
        return self._send(url, lambda: {"model": model, "input": list(texts)}, _embeddings(len(texts)), model)

    def _send(
        self, url: str, body: Callable[[], dict], parse: Callable[[httpx.Response], Any], model: str
    ) -> Any:
        attempt = 0
        while True:
            if self.cancelled.is_set():
                raise LLMCancelled("cancelled before sending")
            if self.limiter is not None:
                self.limiter.acquire(self.cancelled)
            try:
                target = pinned_target(url, self.allowed_base_urls, resolver=self.resolver)
            except UnsafeBaseURL as error:
                raise LLMConfigError(str(error)) from None
            try:
                response = self._http.post(
                    target.url,
                    json=body(),
                    headers=target.headers,
                    extensions=target.extensions,
                )
            except httpx.TimeoutException:
                problem, wait = f"no answer within {self.endpoint.timeout:g}s (timeout)", None
            except httpx.TransportError as error:
                problem, wait = f"connection failed ({type(error).__name__})", None
            else:
                status = response.status_code
                if status < 300:
                    return parse(response)
                # Read to recognise one known refusal, never copied into a message (see the module doc).
                text = response.text[:500]
                if status == 400 and self.json_mode and "response_format" in text:
                    log.info("endpoint does not support response_format; asking without it")
                    self.json_mode = False
                    continue
                if status in (401, 403, 404):
                    raise LLMConfigError(
                        f"the endpoint answered HTTP {status} for model {model!r}: check the base "
                        "URL, model name and API key"
                    )
                if status != 429 and status < 500:
                    raise LLMRejected(f"the endpoint refused the request (HTTP {status}){_hint(text)}")
                problem = f"HTTP {status}"
                wait = retry_after_seconds(response.headers.get("Retry-After"), now=self.clock())
            if attempt >= self.max_retries:
                raise LLMUnavailable(f"{problem}, still after {attempt + 1} attempts")
            attempt += 1
            if wait is not None and self.limiter is not None and self.limiter.pause(wait):
                # The endpoint asked for quiet: every thread and worker of this endpoint waits (in acquire).
                log.info(
                    "LLM request failed (%s); everyone pauses %.1fs, then retry %d", problem, wait, attempt
                )
                continue
            delay = wait if wait is not None else self._backoff(attempt - 1)
            log.info("LLM request failed (%s); retry %d in %.1fs", problem, attempt, delay)
            self.sleep(delay)

    def _completion(self, response: httpx.Response, messages: list[dict[str, str]]) -> Completion:
        try:
            data = response.json()
            text = data["choices"][0]["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise LLMRejected(
                f"the endpoint answered HTTP {response.status_code}, but not in the chat-completions format"
            ) from None
        usage = data.get("usage") or {}
        prompt_tokens = _int(usage.get("prompt_tokens"))
        completion_tokens = _int(usage.get("completion_tokens"))
        total = _int(usage.get("total_tokens")) or prompt_tokens + completion_tokens
        if total:
            return Completion(text, prompt_tokens, completion_tokens, total)
        # No usage reported: estimate (about 4 characters a token) so the spending cap still protects.
        prompt_estimate = estimate_tokens(message_chars(messages))
        completion_estimate = estimate_tokens(len(text))
        return Completion(
            text, prompt_estimate, completion_estimate, prompt_estimate + completion_estimate, estimated=True
        )


@dataclass(frozen=True, slots=True)
class Embeddings:
    vectors: list[list[float]]
    total_tokens: int


def _embeddings(n: int) -> Callable[[httpx.Response], Embeddings]:
    def parse(response: httpx.Response) -> Embeddings:
        try:
            data = response.json()
            rows = sorted(data["data"], key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise LLMRejected(
                f"the endpoint answered HTTP {response.status_code}, but not in the embeddings format"
            ) from None
        if len(vectors) != n or len({len(v) for v in vectors}) > 1:
            raise LLMRejected(f"the endpoint returned {len(vectors)} vectors of mixed sizes for {n} texts")
        return Embeddings(vectors, _int((data.get("usage") or {}).get("total_tokens")))

    return parse


def _hint(body: str) -> str:
    """A reason of our own words for refusals we recognise (the body itself is never shown)."""
    lowered = body.lower()
    if "context" in lowered and ("length" in lowered or "window" in lowered or "too long" in lowered):
        return ": the prompt is too long for the model (lower the trace budget)"
    return ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
