"""A stand-in for an OpenAI-compatible server: `POST /v1/chat/completions` and `POST /v1/embeddings` on
127.0.0.1, in a thread.

`/v1/embeddings` answers deterministic vectors when no reply is scripted (`embedding`: each word of the input
hashed into one of EMBEDDING_DIMENSIONS counts), so texts sharing words get close vectors.

Each request takes the next scripted `Reply` (status, JSON or text body, headers, a delay before answering);
every request is recorded (headers and JSON body) so tests can check what the real client sent.

A reply can be held until the test releases it (`Reply(hold=event)`), and the server counts the requests it
is answering at this moment (`active`, `peak`): tests of concurrency wait for a condition (`wait_until`)
instead of sleeping.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> text
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hold: threading.Event | None = None  # answer only once the test sets it


def answer(
    content: Any, *, prompt_tokens: int = 100, completion_tokens: int = 20, usage: bool = True
) -> Reply:
    """A chat-completions reply whose message content is `content` (a dict becomes its JSON text)."""
    text = content if isinstance(content, str) else json.dumps(content)
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return Reply(body=body)


EMBEDDING_DIMENSIONS = 48


def embedding(text: str) -> list[float]:
    """A deterministic bag of hashed words (the same text, the same vector; shared words, close vectors)."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % EMBEDDING_DIMENSIONS] += 1.0
    return vector


def embeddings_reply(body: Any) -> Reply:
    texts = body.get("input") if isinstance(body, dict) else None
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list):
        return Reply(400, {"error": {"message": "input must be a string or a list of strings"}})
    data = [{"object": "embedding", "index": i, "embedding": embedding(str(t))} for i, t in enumerate(texts)]
    return Reply(body={"object": "list", "data": data, "model": body.get("model", "")})


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeChatServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.active = 0  # requests being answered now
        self.peak = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode(errors="replace")
                with server._changed:
                    server.requests.append(Seen(self.path, dict(self.headers.items()), body))
                    if server.replies:
                        reply = server.replies.popleft()
                    elif self.path == "/v1/embeddings":
                        reply = embeddings_reply(body)
                    else:
                        reply = Reply(500, {"error": "no scripted reply"})
                    server.active += 1
                    server.peak = max(server.peak, server.active)
                    server._changed.notify_all()
                try:
                    self._answer(reply)
                finally:
                    with server._changed:
                        server.active -= 1
                        server._changed.notify_all()

            def _answer(self, reply: Reply) -> None:
                if self.path not in ("/v1/chat/completions", "/v1/embeddings"):
                    reply = Reply(404, {"error": {"message": f"no route {self.path}"}})
                if reply.hold is not None:
                    reply.hold.wait(timeout=30)  # a test that forgot to release must not hang forever
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header(
                        "Content-Type",
                        "application/json" if not isinstance(reply.body, str) else "text/plain",
                    )
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def wait_until(self, condition: Callable[[FakeChatServer], bool], timeout: float = 10.0) -> bool:
        """Block until `condition(server)` holds (checked whenever a request arrives or ends); False if it
        did not within `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self), timeout=timeout)

    def start(self) -> FakeChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
