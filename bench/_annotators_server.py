"""The processes bench/bench_annotators.py measures: gunicorn (and, with Redis, one Celery worker) on the
bench's database, the server times of its access log, and the CPU time from /proc of the web workers, the
database backends, the Celery worker and the client.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from _setup import ROOT

# Captured at import, before the bench calls setup_django, which leaves Redis out of the bench process itself.
REDIS_URL = os.environ.get("REDIS_URL", "")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn (and, with Redis, one Celery worker) on the bench database, for the length of the run."""

    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.port = free_port()
        self.access_log = workdir / "access.log"
        self.queue = f"bench-{secrets.token_hex(4)}"
        self.env = {
            **os.environ,
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "FIELD_ENCRYPTION_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "VAR_DIR": str(workdir),
            # Connections outlive the run (the default recycles them every 60 s), so the CPU time of the
            # database backends serving the web workers is counted in full for each phase.
            "DB_CONN_MAX_AGE": "600",
        }
        if REDIS_URL:
            self.env["REDIS_URL"] = REDIS_URL
            self.env["CELERY_DEFAULT_QUEUE"] = self.queue
            self.env["CACHE_KEY_PREFIX"] = self.queue
        else:
            self.env.pop("REDIS_URL", None)
        self.env.pop("BENCH_GOALS_FILE", None)
        venv_bin = Path(sys.executable).parent
        gunicorn = [
            str(venv_bin / "gunicorn"),
            "annotator.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(args.workers),
            "--worker-class",
            args.worker_class,
            "--backlog",
            "2048",
            "--access-logfile",
            str(self.access_log),
            # Method, path, status and the server's time in microseconds (accept to response sent).
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
            "--log-level",
            "warning",
        ]
        if args.worker_class == "gthread":
            # gthread keeps connections alive (2 s by default): longer than a paced annotator's pause, or
            # the server closes a connection just as the client reuses it.
            gunicorn += ["--threads", str(args.threads), "--keep-alive", str(int(3 * args.pause) + 5)]
        self.procs = [subprocess.Popen(gunicorn, cwd=ROOT, env=self.env, start_new_session=True)]
        self.celery = bool(REDIS_URL) and not args.no_celery_worker
        if self.celery:
            celery = [
                str(venv_bin / "celery"),
                "--quiet",
                "-A",
                "annotator",
                "worker",
                "-P",
                "solo",
                "-Q",
                self.queue,
                "--loglevel",
                "WARNING",
                "--without-mingle",
                "--without-gossip",
            ]
            self.procs.append(subprocess.Popen(celery, cwd=ROOT, env=self.env, start_new_session=True))

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs[0].poll() is not None:
                raise SystemExit("gunicorn exited before it answered")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"gunicorn did not answer on {self.base} within {timeout:.0f} s")

    def log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def server_times(self, start: int, end: int) -> dict[str, list[float]]:
        """Server time (ms) per action from the access log between two offsets."""
        times: dict[str, list[float]] = defaultdict(list)
        with open(self.access_log, "rb") as fh:
            fh.seek(start)
            chunk = fh.read(end - start).decode()
        for line in chunk.splitlines():
            parts = line.split()
            if len(parts) != 4:
                continue
            method, path, _status, micros = parts
            action = _action_of(method, path)
            if action:
                times[action].append(int(micros) / 1000)
        return times

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if REDIS_URL:
            _drop_queue(self.queue)


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process (Linux /proc), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent:
            found.append(int(entry.name))
    return found


def cpu_snapshot(server: Server) -> dict[str, dict[int, float]]:
    """CPU seconds so far of the web workers, the database's backends for this run's database, the Celery
    worker and this process (the client). On a machine shared with other jobs, CPU time per cycle is the
    figure the load disturbs least; wall-clock latency includes waiting for the other jobs."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        backends = [row[0] for row in cursor.fetchall()]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    groups = {
        "web": _children(server.procs[0].pid),
        "database": backends,
        "worker": [proc.pid for proc in server.procs[1:]],
    }
    snapshot = {name: {pid: _cpu_seconds(pid) for pid in pids} for name, pids in groups.items()}
    snapshot["client"] = {0: usage.ru_utime + usage.ru_stime}
    return snapshot


def cpu_used(start: dict[str, dict[int, float]], end: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds per group between two snapshots (a backend that started meanwhile counts in full)."""
    return {
        name: sum(seconds - start[name].get(pid, 0.0) for pid, seconds in pids.items())
        for name, pids in end.items()
    }


def _drop_queue(queue: str) -> None:
    """Leave nothing of the run in Redis: its queue (tasks for a dropped database), the queue's bindings
    that the broker keeps, and the cache keys of the run (debounce, cached figures: the server's cache keys
    start with the queue's name)."""
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        keys = [queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"]
        keys += client.scan_iter(match=f"{queue}:*", count=1000)
        client.delete(*keys)
    except Exception as error:  # the bench's figures stand; say what was left behind
        print(f"note: could not delete the run's Redis keys ({queue}...): {error}")


def _action_of(method: str, path: str) -> str | None:
    if method == "POST" and path.endswith("/assignments/next/"):
        return "claim"
    if method == "PUT" and path.endswith("/annotation/"):
        return "draft"
    if method == "POST" and path.endswith("/submit/"):
        return "submit"
    return None
