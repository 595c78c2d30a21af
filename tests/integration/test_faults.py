"""Faults on the real stack (issue 11, "nothing stuck, nothing lost"), run by .ci/run.

- A worker killed (SIGKILL) in the middle of an import and of an agreement report: the job's heartbeat
  stops, the reconciliation hands it to a live worker, and it ends in a final state with its reason.
  The test starts and kills its OWN worker on a private queue; the shared CI worker finishes the job.
- The cache pointed at a closed port while annotators submit: every submit answers, and every
  submitted annotation reaches the adjudication queue through the real worker.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from tests.services import require_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
FAULT_QUEUE = "fault-test"


def wait_for(check, timeout: float = 120.0, what: str = "the condition"):
    """Poll the database: workers write through their own connections, so there is nothing to await."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class KillableWorker:
    """A Celery worker of our own on a private queue, in its own process group so it can be killed whole."""

    def __init__(self, **env: str):
        self.log = ROOT / "var" / f"fault-worker-{uuid.uuid4().hex[:8]}.log"
        self.log.parent.mkdir(exist_ok=True)
        environment = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "DB_CONN_MAX_AGE": "0",
            "JOB_HEARTBEAT_SECONDS": "1",
            **env,
        }
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("celery")),
                    "-A",
                    "annotator.celery",
                    "worker",
                    "-Q",
                    FAULT_QUEUE,
                    "--concurrency",
                    "1",
                    "--without-gossip",
                    "--without-mingle",
                    "-n",
                    f"fault-{uuid.uuid4().hex[:8]}@%h",
                ],
                cwd=ROOT,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)  # the worker and its pool children: nothing survives
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def killable_worker():
    started = []

    def start(**env: str) -> KillableWorker:
        worker = KillableWorker(**env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(autouse=True)
def workers_idle_at_the_end():
    """The test's teardown empties every table (TRUNCATE); a worker still finishing what a test started (a
    resumed job's follow-ups, a debounced report refresh) would deadlock with it and leave rows for the next
    test. So each test ends when no worker has a task running, reserved or scheduled."""
    yield
    from annotator.services.enqueue import celery_app

    app = celery_app()

    def idle() -> bool:
        inspect = app.control.inspect(timeout=1.0)
        for tasks in (inspect.active(), inspect.reserved(), inspect.scheduled()):
            if tasks is None:  # no worker answered: nothing can be running
                continue
            if any(tasks.values()):
                return False
        return True

    wait_for(idle, timeout=120, what="the workers to finish what the test started")


@pytest.fixture
def fast_reconcile(settings):
    settings.JOB_HEARTBEAT_TIMEOUT = 5


def lost_and_reconciled(model, pk: int) -> None:
    """Wait until the killed worker's heartbeat is stale, then run the reconciliation as beat would."""
    from datetime import timedelta

    from django.utils import timezone

    from annotator.services.jobs import do_reconcile

    def stale():
        job = model.objects.get(pk=pk)
        return job.heartbeat_at < timezone.now() - timedelta(seconds=django_settings.JOB_HEARTBEAT_TIMEOUT)

    wait_for(stale, what="the killed worker's heartbeat to go stale")
    do_reconcile()  # CI's own beat may get there first (it uses the default timeout): either hands it on
    job = model.objects.get(pk=pk)
    assert job.status != "running" or job.heartbeat_at > timezone.now() - timedelta(seconds=5)


def test_an_import_whose_worker_is_killed_is_finished_by_another(
    project, owner, killable_worker, fast_reconcile
):
    require_worker()
    from annotator.services.enqueue import celery_app

    app = celery_app()
    from annotator.models import ImportJob
    from traces.importers.synthetic import native_lines, synthetic_traces
    from traces.models import Trace

    folder = Path(django_settings.UPLOAD_DIR) / uuid.uuid4().hex
    folder.mkdir(parents=True)
    path = folder / "000-big.jsonl"
    with path.open("w") as out:
        for line in native_lines(synthetic_traces(1500, steps=20, seed=3)):
            out.write(line + "\n")
    job = ImportJob.objects.create(
        project=project,
        batch_name="killed-import",
        files=[{"path": str(path), "name": "big.jsonl", "size": path.stat().st_size}],
        bytes_total=path.stat().st_size,
        created_by=owner,
    )
    worker = killable_worker()
    app.tasks["annotator.run_import_job"].apply_async((job.pk,), queue=FAULT_QUEUE)
    wait_for(lambda: ImportJob.objects.get(pk=job.pk).status == "running", what="the import to start")
    worker.kill()
    assert ImportJob.objects.get(pk=job.pk).status == "running"  # the dead worker cannot say otherwise
    lost_and_reconciled(ImportJob, job.pk)

    job = wait_for(
        lambda: ImportJob.objects.filter(pk=job.pk, status__in=["succeeded", "failed"]).first(),
        timeout=300,
        what="the resumed import to end",
    )
    assert job.status == "succeeded", job.error or job.errors
    assert job.attempts == 2 and job.summary["traces"] == 1500
    assert (
        Trace.objects.filter(batch__name="killed-import").count() == 1500
    )  # once: the first run rolled back
    assert not path.exists()  # the upload went with the job


def test_a_report_whose_worker_is_killed_is_finished_by_another(
    project, annotator_a, annotator_b, killable_worker, fast_reconcile
):
    require_worker()
    from annotator.services.enqueue import celery_app

    app = celery_app()
    from annotator.models import AgreementReport
    from annotator.services.reports import do_request_report
    from tests.labels import project_trace, submit

    for k in range(6):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1], **({"FM-2.1": [2]} if k % 2 else {})})
        submit(project, trace, annotator_b, {"FM-1.1": [1]})
    report = do_request_report(project, {"batch": "none-such"}, enqueue=False)
    # Many bootstrap resamples: long enough to be killed mid-computation on the private worker.
    worker = killable_worker(AGREEMENT_BOOTSTRAP="2000000", AGREEMENT_PAIR_BOOTSTRAP="2000000")
    app.tasks["annotator.agreement.compute_report"].apply_async((report.pk,), queue=FAULT_QUEUE)
    wait_for(
        lambda: AgreementReport.objects.get(pk=report.pk).status == "running", what="the report to start"
    )
    worker.kill()
    lost_and_reconciled(AgreementReport, report.pk)

    report = wait_for(
        lambda: AgreementReport.objects.filter(pk=report.pk, status__in=["succeeded", "failed"]).first(),
        what="the resumed report to end",
    )
    assert report.status == "succeeded", report.error
    assert report.attempts == 2 and report.finished_at is not None


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_submits_with_the_cache_on_a_closed_port_all_reach_adjudication(
    client, project, annotator_a, annotator_b, settings
):
    require_worker()
    settings.CACHES = {
        "default": {
            "BACKEND": "annotator.cache.ResilientRedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    submit_five_and_wait_for_adjudication(client, project, annotator_a, annotator_b)


def test_submits_collected_in_the_cache_all_reach_adjudication(client, project, annotator_a, annotator_b):
    """The normal path with a worker: completed traces are collected in Redis and checked together."""
    require_worker()
    from django.core.cache import cache

    assert hasattr(cache, "add_to_set")
    submit_five_and_wait_for_adjudication(client, project, annotator_a, annotator_b)


def submit_five_and_wait_for_adjudication(client, project, annotator_a, annotator_b) -> None:
    from annotator.models import AdjudicationItem, Assignment
    from tests.labels import project_trace

    traces = [project_trace(project) for _ in range(5)]
    for n, trace in enumerate(traces):
        for user, label in ((annotator_a, "FM-1.1"), (annotator_b, "FM-1.1" if n % 2 else "FM-2.1")):
            slot, _ = Assignment.objects.get_or_create(project=project, trace=trace, annotator=user)
            client.force_login(user)
            page = client.get(f"/p/{project.slug}/a/{slot.pk}/")
            assert page.status_code == 200
            response = client.post(
                f"/p/{project.slug}/a/{slot.pk}/submit/",
                {"version": "0", "elapsed": "5", "labels": label},
                HTTP_HX_REQUEST="true",
            )
            assert response.status_code == 204, response.content[:500]

    def all_checked():
        return AdjudicationItem.objects.filter(project=project, trace__in=traces).count() == len(traces)

    wait_for(all_checked, what="every trace to reach adjudication")
    statuses = dict(AdjudicationItem.objects.filter(project=project).values_list("trace_id", "status"))
    assert [statuses[t.pk] for t in traces] == ["open", "agreed", "open", "agreed", "open"]
