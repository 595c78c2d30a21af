"""Issue 32's parquet bomb (2 KB of zstd, 64 values of 30 MB) sent to a real worker (started by .ci/run): its
job fails naming the file, under the worker's memory ceiling (IMPORT_MAX_MEMORY_MB), and the same worker
imports the next file."""

from __future__ import annotations

import pytest

from tests import bombs
from tests.integration.test_import_worker import queue_files, wait_for_job
from tests.services import require_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_parquet_bomb_fails_its_job_on_a_worker_and_the_next_import_succeeds(project, owner):
    require_worker()
    from celery import current_app

    from traces.models import Trace

    assert not current_app.conf.task_always_eager

    def queue(name: str, body: bytes):
        return queue_files(project, owner, f"batch-{name}", {name: body})

    failed = wait_for_job(queue("bomb.parquet", bombs.parquet_bomb()).pk)
    assert failed.status == "failed"
    assert failed.errors == [
        {
            "file": "bomb.parquet",
            "error": "bomb.parquet: the file inflates more than 200 times its compressed size "
            "(a decompression bomb?; limit IMPORT_MAX_ZIP_RATIO)",
        }
    ]
    assert not Trace.objects.filter(batch__name="batch-bomb.parquet").exists()
    data, rows = bombs.parquet_traces(3)
    done = wait_for_job(queue("fine.parquet", data).pk)
    assert done.status == "succeeded", done.errors
    assert sorted(
        Trace.objects.filter(batch__name="batch-fine.parquet").values_list("external_id", flat=True)
    ) == [row["id"] for row in rows]
