"""An OpenAI-compatible chat-completions stand-in on 127.0.0.1 for tests and benchmarks: every request is
answered by a *model* object, after the model's latency (as a real model takes its time), from a thread of its
own, with token usage. It counts the requests it is answering at once (`peak`), so a bench can show the
concurrency the endpoint really saw.

A model has `latency` (seconds), `usage` (the token counts each answer reports), `reply(body) -> str` (the
assistant's message for a chat request), if it serves `/embeddings`, `embed(body) -> dict`, and may set
`unavailable` to have every request answered 503, as by a server that is down. `FixedAnswer`
gives every request one valid MAST answer (bench/bench_llm_run.py); tests/discovery/standin.py reads each
request and answers as a rule-bound model would. Standard library only: a bench imports it from the repo root
(bench/_setup.py puts the root on sys.path). For scripted replies, errors and held requests, see
tests/llm/fake_server.py.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


class Model(Protocol):
    latency: float
    usage: dict[str, int]

    def reply(self, body: dict) -> str: ...


class FixedAnswer:
    """Every chat request answered with the same valid answer in the LLM rater's format."""

    ANSWER = {
        "modes": {"FM-1.3": {"present": True, "steps": [1], "reason": "It repeats the same search."}},
        "summary": "The agent loops on one step.",
    }
    usage = {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self._content = json.dumps(self.ANSWER)

    def reply(self, body: dict) -> str:
        return self._content


class ChatStandIn:
    """The server: `with ChatStandIn(model) as standin:` serves on `standin.base_url` until the block ends."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.requests = 0
        self.active = 0
        self.peak = 0
        lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real server: the client reuses its connections

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with lock:
                    standin.requests += 1
                    standin.active += 1
                    standin.peak = max(standin.peak, standin.active)
                try:
                    if standin.model.latency:
                        time.sleep(
                            standin.model.latency
                        )  # the model thinking: benches measure waiting, not CPU
                    self._send(*standin.answer(self.path, body))
                finally:
                    with lock:
                        standin.active -= 1

            def _send(self, status: int, payload: dict | None) -> None:
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                if payload is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    def answer(self, path: str, body: dict) -> tuple[int, dict | None]:
        """The status and JSON body for one request: an embeddings list, or a chat completion (no body: the
        server is down)."""
        if getattr(self.model, "unavailable", False):
            return 503, None
        if path.endswith("/embeddings"):
            embed = getattr(self.model, "embed", None)
            if embed is None:
                return 404, {"error": {"message": "this stand-in serves no embeddings"}}
            return 200, embed(body)
        message = {"role": "assistant", "content": self.model.reply(body)}
        return 200, {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": dict(self.model.usage),
        }

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reset(self) -> None:
        self.requests = self.peak = 0

    def __enter__(self) -> ChatStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
