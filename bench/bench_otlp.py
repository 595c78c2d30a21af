"""Live OTLP ingest benchmark: spans per second the endpoint accepts under gunicorn, against the same spans
imported from an OTLP JSON file.

`DATABASE_URL=postgres://... REDIS_URL=redis://127.0.0.1:6379/N python bench/bench_otlp.py [--traces 1200]
[--spans 10] [--exporters 4] [--batch 512] [--workers 4]`

Records `--traces` agent runs of `--spans` spans each (an AGENT root, LLM and TOOL children with OpenInference
attributes) with the real OpenTelemetry SDK, then:

- the baseline: the same spans written as one OTLP JSON file and imported with `manage.py import_traces` in
  this process (parse, map, COPY), spans per second;
- the endpoint: gunicorn on the bench database with Redis as the broker (tasks are queued, not run: the
  request only validates, bounds and queues), `--exporters` threads each with its own `OTLPSpanExporter`
  (protobuf, gzip) sending batches of `--batch` spans, spans per second from the first request to the last
  answer, and each export call's time (client-side: encoding, gzip, request, answer);
- afterwards the stored requests are read into one row per span as the assembly task does first (timed on
  its own), every span is looked for in the queue (0 lost), and the queued traces are assembled in this
  process (their rate is shown for the record).

Goals: the endpoint accepts at least half the file import's rate, p95 of an export call under 200 ms, 0 spans
lost. Needs PostgreSQL and Redis (REDIS_URL, else the local one on 127.0.0.1:6379 if it answers): without a
broker the tasks would run inside the requests.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, goal, setup_django, table

LOCAL_REDIS = "redis://127.0.0.1:6379/0"


def _redis_url() -> str:
    """REDIS_URL, or the local Redis when one answers (the run uses a queue of its own and removes it)."""
    url = os.environ.get("REDIS_URL", "")
    if url:
        return url
    try:
        import redis

        redis.Redis.from_url(LOCAL_REDIS, socket_connect_timeout=1).ping()
        return LOCAL_REDIS
    except Exception:
        return ""


REDIS_URL = _redis_url()


def record_runs(traces: int, spans: int):
    """`traces` runs of `spans` spans each, finished, as the SDK hands them to an exporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench.otlp")
    text = "The quick brown fox jumps over the lazy dog. " * 5
    for n in range(traces):
        with tracer.start_as_current_span("agent") as root:
            root.set_attributes({"openinference.span.kind": "AGENT", "input.value": f"task {n}: {text}"})
            for i in range(spans - 1):
                if i % 2:
                    with tracer.start_as_current_span("tool") as span:
                        span.set_attributes(
                            {
                                "openinference.span.kind": "TOOL",
                                "tool.name": "search",
                                "tool.parameters": json.dumps({"q": f"query {n}-{i}"}),
                                "output.value": f"result {n}-{i}: {text}",
                            }
                        )
                else:
                    with tracer.start_as_current_span("llm") as span:
                        span.set_attributes(
                            {
                                "openinference.span.kind": "LLM",
                                "llm.model_name": "gpt-4o-mini",
                                "llm.input_messages.0.message.role": "user",
                                "llm.input_messages.0.message.content": text,
                                "llm.output_messages.0.message.role": "assistant",
                                "llm.output_messages.0.message.content": f"answer {n}-{i}: {text}",
                                "llm.token_count.total": 120,
                            }
                        )
    provider.shutdown()
    return list(memory.get_finished_spans())


def otlp_json_file(spans, path: Path) -> None:
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document = json_format.MessageToDict(encode_spans(spans))

    def hexed(node):
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexed(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [hexed(x) for x in node]
        return node

    path.write_text(json.dumps(hexed(document)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn on the bench database, Redis as its broker (a queue of the run's own, no worker)."""

    def __init__(self, workers: int, workdir: Path):
        self.port = free_port()
        self.queue = f"bench-otlp-{secrets.token_hex(4)}"
        self.access_log = workdir / "access.log"
        env = {
            **os.environ,
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "FIELD_ENCRYPTION_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "VAR_DIR": str(workdir),
            "DB_CONN_MAX_AGE": "600",
            "REDIS_URL": REDIS_URL,
            "CELERY_DEFAULT_QUEUE": self.queue,
            "CELERY_IMPORT_QUEUE": self.queue,
            "CACHE_KEY_PREFIX": self.queue,
        }
        env.pop("BENCH_GOALS_FILE", None)
        gunicorn = [
            str(Path(sys.executable).parent / "gunicorn"),
            "annotator.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--backlog",
            "2048",
            "--log-level",
            "warning",
            "--access-logfile",
            str(self.access_log),
            # Path, status and the server's time in microseconds (accept to response sent).
            "--access-logformat",
            "%(U)s %(s)s %(D)s",
        ]
        self.proc = subprocess.Popen(gunicorn, cwd=ROOT, env=env, start_new_session=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("gunicorn exited before it answered")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"gunicorn did not answer on {self.base} within {timeout:.0f} s")

    def request_times(self, start: int) -> list[float]:
        """Server time (ms) of each OTLP request logged after byte `start` of the access log."""
        with open(self.access_log, "rb") as fh:
            fh.seek(start)
            lines = fh.read().decode().splitlines()
        return [
            int(line.split()[2]) / 1000
            for line in lines
            if "/otlp/v1/traces" in line and len(line.split()) == 3
        ]

    def log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def warm_up(self, slug: str, key: str, workers: int) -> int:
        """One-span requests until every worker has loaded its code and connected to the database and the
        broker (an empty request queues nothing, so it would leave the broker's first connection to the
        measured run); returns how many spans (each its own one-span trace) were sent."""
        from concurrent.futures import ThreadPoolExecutor

        import httpx
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        runs = record_runs(workers * 8, 1)

        def one(span) -> None:
            httpx.post(
                f"{self.base}/api/projects/{slug}/otlp/v1/traces",
                content=encode_spans([span]).SerializeToString(),
                headers={"Authorization": f"Token {key}", "Content-Type": "application/x-protobuf"},
                timeout=30,
            ).raise_for_status()

        with ThreadPoolExecutor(workers * 2) as pool:
            list(pool.map(one, runs))
        return len(runs)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            import redis

            client = redis.Redis.from_url(REDIS_URL)
            keys = [self.queue, f"_kombu.binding.{self.queue}", f"_kombu.binding_permanent.{self.queue}"]
            keys += list(client.scan_iter(match=f"{self.queue}:*", count=1000))
            client.delete(*keys)
        except Exception as error:  # the figures stand; say what was left behind
            print(f"note: could not delete the run's Redis keys ({self.queue}...): {error}")


def send(base: str, slug: str, key: str, batches: list, exporters: int) -> tuple[float, list[float], int]:
    """Every batch through `exporters` concurrent OTLPSpanExporters; (seconds, per-call ms, failures)."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    times: list[float] = []
    failures = 0
    lock = threading.Lock()

    def work(mine: list) -> None:
        nonlocal failures
        exporter = OTLPSpanExporter(
            endpoint=f"{base}/api/projects/{slug}/otlp/v1/traces",
            headers={"Authorization": f"Token {key}"},
            compression=Compression.Gzip,
            timeout=30,
        )
        for batch in mine:
            start = time.perf_counter()
            result = exporter.export(batch)
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                times.append(elapsed)
                failures += result != SpanExportResult.SUCCESS
        exporter.shutdown()

    threads = [threading.Thread(target=work, args=(batches[i::exporters],)) for i in range(exporters)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start, times, failures


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 95 // 100) - 1)] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1200)
    parser.add_argument("--spans", type=int, default=10, help="spans per trace")
    parser.add_argument("--exporters", type=int, default=4)
    parser.add_argument("--batch", type=int, default=512, help="spans per export request")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    args = parser.parse_args()
    if not REDIS_URL:
        raise SystemExit("This benchmark needs Redis as the broker: set REDIS_URL=redis://127.0.0.1:6379/N")
    setup_django(need_postgres=True)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from annotator.live.assembly import do_assemble_due
    from annotator.live.service import do_read_batches
    from annotator.models import Membership, PendingSpan, Project
    from annotator.services.api_tokens import do_issue_ingest_token
    from taxonomy.services import load_builtin_taxonomies
    from traces.models import Trace

    version = load_builtin_taxonomies()[0][0]
    owner = get_user_model().objects.create_user("bench-owner", password=secrets.token_urlsafe(12))
    live = Project.objects.create(slug="bench-live", name="Bench live", taxonomy_version=version)
    filed = Project.objects.create(slug="bench-file", name="Bench file", taxonomy_version=version)
    for project in (live, filed):
        Membership.objects.create(project=project, user=owner, role="owner")
    _, key = do_issue_ingest_token(live, owner)

    spans = record_runs(args.traces, args.spans)
    total = len(spans)
    batches = [spans[i : i + args.batch] for i in range(0, total, args.batch)]
    print(
        f"{args.traces} traces x {args.spans} spans = {total} spans, {len(batches)} batches of <= {args.batch}"
    )

    with tempfile.TemporaryDirectory(prefix="bench-otlp-") as tmp:
        workdir = Path(tmp)
        path = workdir / "spans.otlp.json"
        otlp_json_file(spans, path)
        start = time.perf_counter()
        call_command("import_traces", str(path), batch="file", format="otel", project=filed.slug, verbosity=0)
        file_seconds = time.perf_counter() - start
        file_traces = Trace.objects.in_project(filed).count()

        server = Server(args.workers, workdir)
        try:
            server.wait_ready()
            warm = server.warm_up(live.slug, key, args.workers)
            time.sleep(0.5)  # gunicorn writes an access line after its response
            offset = server.log_offset()
            seconds, times, failures = send(server.base, live.slug, key, batches, args.exporters)
            time.sleep(0.5)
            served = server.request_times(offset)
        finally:
            server.stop()

    # The requests stored one row each (SpanBatch); reading them into one row per span is the task's first
    # step, timed on its own here.
    start = time.perf_counter()
    do_read_batches(live)
    read_seconds = time.perf_counter() - start
    stored = PendingSpan.objects.filter(project=live).count()
    lost = total + warm - stored
    start = time.perf_counter()
    do_assemble_due(live.pk, timezone.now() + timezone.timedelta(days=1))
    assemble_seconds = time.perf_counter() - start
    live_traces = Trace.objects.in_project(live).count()

    file_rate = total / file_seconds
    rate = total / seconds
    p95 = _p95(served)
    print(
        table(
            [
                (
                    "file import (import_traces, OTLP JSON)",
                    f"{file_seconds:.2f}",
                    f"{file_rate:,.0f}",
                    "",
                    file_traces,
                ),
                (
                    f"endpoint ({args.exporters} exporters, gunicorn x{args.workers})",
                    f"{seconds:.2f}",
                    f"{rate:,.0f}",
                    f"{rate / file_rate:.2f}x",
                    "queued",
                ),
                (
                    "task: reading the requests into span rows",
                    f"{read_seconds:.2f}",
                    f"{total / read_seconds:,.0f}",
                    "",
                    "",
                ),
                (
                    "assembly of the queued spans (for the record)",
                    f"{assemble_seconds:.2f}",
                    f"{total / assemble_seconds:,.0f}",
                    "",
                    live_traces,
                ),
            ],
            ("what", "seconds", "spans/s", "vs file", "traces"),
        )
    )
    print(
        f"requests (server time, gunicorn's access log): {len(served)}, p50 {statistics.median(served):.0f} ms, "
        f"p95 {p95:.0f} ms; export calls (client side: encoding, gzip, request, answer, with "
        f"{args.exporters} exporter threads in one Python process): p50 {statistics.median(times):.0f} ms, "
        f"p95 {_p95(times):.0f} ms, failed {failures}; spans lost {lost}"
    )
    goal("endpoint spans/s vs file import", f"{rate / file_rate:.2f}x", ">= 0.5x", rate >= 0.5 * file_rate)
    goal("request p95 (server)", f"{p95:.0f} ms", "< 200 ms", p95 < 200)
    goal(
        "spans lost",
        str(lost + failures * 0),
        "0",
        lost == 0 and failures == 0 and live_traces == args.traces + warm,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
