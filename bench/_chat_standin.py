"""A chat-completions stand-in for benchmarks: every request is answered after a fixed latency (as a real
model takes its time), from its own thread, with a valid MAST answer and token usage. It counts the requests
it is answering at once (`peak`), so a bench can show the concurrency the endpoint really saw."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = {
    "modes": {"FM-1.3": {"present": True, "steps": [1], "reason": "It repeats the same search."}},
    "summary": "The agent loops on one step.",
}


class ChatStandIn:
    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests = 0
        self.active = 0
        self.peak = 0
        lock = threading.Lock()
        standin = self
        body = json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(ANSWER)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960},
            }
        ).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real server: the client reuses its connections

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    standin.requests += 1
                    standin.active += 1
                    standin.peak = max(standin.peak, standin.active)
                try:
                    time.sleep(standin.latency)  # the model thinking: this bench measures waiting, not CPU
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    with lock:
                        standin.active -= 1

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

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
