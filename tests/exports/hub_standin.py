"""A local stand-in for the few Hugging Face Hub endpoints `HfApi.create_repo` and `upload_folder` call.

The real `huggingface_hub` client talks to it over HTTP on 127.0.0.1, so the push path is tested end to
end without the network. Endpoints (read from huggingface_hub's source: hf_api.create_repo,
_validate_yaml, repo_info; _commit_api._fetch_upload_modes and _send_commit):

- POST /api/repos/create                          {"name", "organization", "type", "visibility"}
- POST /api/validate-yaml                         README front matter check
- GET  /api/datasets/{ns}/{name}[/revision/{rev}] repo_info (create_repo's exist_ok fallback)
- POST /api/datasets/{ns}/{name}/preupload/{rev}  answers uploadMode "regular" for every file: no LFS/xet
- POST /api/datasets/{ns}/{name}/commit/{rev}     NDJSON: a header line, then file lines (base64)

`fail` makes an endpoint answer an error status instead (401, 403, 409 ...), to test the messages.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StandInHub:
    def __init__(self) -> None:
        self.repos: dict[
            str, dict
        ] = {}  # repo id -> {"private": bool, "files": {path: bytes}, "commits": [...]}
        self.fail: dict[str, int] = {}  # endpoint name (create, validate, info, preupload, commit) -> status
        self.existing: set[str] = set()  # repos that "belong to someone else": create answers 409
        self.requests: list[tuple[str, str, dict]] = []  # (method, path, headers)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> StandInHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def files(self, repo_id: str) -> dict[str, bytes]:
        return self.repos[repo_id]["files"]

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def _route(self, method: str) -> None:
                hub.requests.append((method, self.path, dict(self.headers)))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                routes = [
                    ("POST", r"^/api/repos/create$", "create", hub._create),
                    (
                        "POST",
                        r"^/api/validate-yaml$",
                        "validate",
                        lambda m, b: (200, {"errors": [], "warnings": []}),
                    ),
                    ("POST", r"^/api/datasets/([^/]+/[^/]+)/preupload/([^/]+)$", "preupload", hub._preupload),
                    ("POST", r"^/api/datasets/([^/]+/[^/]+)/commit/([^/]+)$", "commit", hub._commit),
                    ("GET", r"^/api/datasets/([^/]+/[^/]+)(?:/revision/([^/]+))?$", "info", hub._info),
                ]
                for verb, pattern, name, handler in routes:
                    match = re.match(pattern, path)
                    if verb == method and match:
                        if name in hub.fail:
                            status = hub.fail[name]
                            return self._send(status, {"error": f"stand-in refuses {name} with {status}"})
                        status, payload = handler(match, body)
                        return self._send(status, payload)
                self._send(404, {"error": f"no route {method} {path}"})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _create(self, match, body: bytes):
        data = json.loads(body)
        repo_id = f"{data.get('organization')}/{data['name']}" if data.get("organization") else data["name"]
        if repo_id in self.existing or repo_id in self.repos:
            return 409, {
                "error": "You already created this dataset repo",
                "url": f"{self.url}/datasets/{repo_id}",
            }
        self.repos[repo_id] = {"private": data.get("visibility") == "private", "files": {}, "commits": []}
        return 200, {"url": f"{self.url}/datasets/{repo_id}", "name": repo_id}

    def _info(self, match, body: bytes):
        repo_id = match.group(1)
        if repo_id not in self.repos:
            return 404, {"error": "Repository not found"}
        commits = self.repos[repo_id]["commits"]
        return 200, {
            "id": repo_id,
            "sha": commits[-1] if commits else "0" * 40,
            "private": False,
            "siblings": [],
        }

    def _preupload(self, match, body: bytes):
        if match.group(1) not in self.repos:
            return 404, {"error": "Repository not found"}
        files = json.loads(body)["files"]
        return 200, {
            "files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
        }

    def _commit(self, match, body: bytes):
        repo_id = match.group(1)
        repo = self.repos.get(repo_id)
        if repo is None:
            return 404, {"error": "Repository not found"}
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        header = lines[0]
        assert header["key"] == "header", header
        for line in lines[1:]:
            assert line["key"] == "file", f"only regular files are expected, got {line['key']}"
            assert line["value"]["encoding"] == "base64"
            repo["files"][line["value"]["path"]] = base64.b64decode(line["value"]["content"])
        oid = hashlib.sha1(body).hexdigest()
        repo["commits"].append(oid)
        repo["last_message"] = header["value"]["summary"]
        return 200, {
            "commitUrl": f"{self.url}/datasets/{repo_id}/commit/{oid}",
            "commitOid": oid,
            "pullRequestUrl": None,
        }
