"""Import benchmark: 10,000 synthetic traces x 50 steps into PostgreSQL, against a raw COPY of the same rows.

    python bench/bench_import.py [--traces 10000] [--steps 50]

Prints traces/s and steps/s for our import (parse + validate + hash + de-duplicate + insert) and for a raw
COPY of the same trace and step rows measured in the same run, their ratio, and the import's peak Python
memory for a file and for a file 10x smaller (memory must stay flat as the file grows).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _setup import setup_django, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    vendor = setup_django(need_postgres=True)

    from django.db import connection, transaction

    from traces.importers.synthetic import native_lines, synthetic_traces
    from traces.models import Step, Trace
    from traces.services import STEP_COLUMNS

    work = Path(tempfile.mkdtemp(prefix="bench-import-"))
    small, large = work / "small.jsonl", work / "large.jsonl"
    for path, n in ((small, max(1, args.traces // 10)), (large, args.traces)):
        with path.open("w") as out:
            for line in native_lines(synthetic_traces(n, steps=args.steps, seed=n)):
                out.write(line + "\n")

    # Each import runs in its own process so its peak memory (max RSS) is its own.
    small_time, small_peak = _child_import(small, "bench-small")
    ours, large_peak = _child_import(large, "bench-large")
    n_steps = Step.objects.filter(trace__batch__name="bench-large").count()

    # Baseline: the same rows (read back from what we imported) COPYed raw into the same tables.
    trace_columns = [f.column for f in Trace._meta.concrete_fields if f.column != "id"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(trace_columns)} FROM traces_trace t WHERE batch_id = "
            "(SELECT id FROM traces_batch WHERE name = 'bench-large')"
        )
        trace_rows = cursor.fetchall()
        cursor.execute(
            f"SELECT {', '.join(STEP_COLUMNS)} FROM traces_step WHERE trace_id IN "
            "(SELECT id FROM traces_trace WHERE batch_id = (SELECT id FROM traces_batch WHERE name = 'bench-large'))"
        )
        step_rows = cursor.fetchall()
    trace_rows = [_jsonable(row) for row in trace_rows]
    step_rows = [_jsonable(row) for row in step_rows]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM traces_step")
            cursor.execute("DELETE FROM traces_trace")
        started = time.perf_counter()
        with connection.cursor() as cursor:
            with cursor.copy(f"COPY traces_trace ({', '.join(trace_columns)}) FROM STDIN") as copy:
                for row in trace_rows:
                    copy.write_row(row)
            with cursor.copy(f"COPY traces_step ({', '.join(STEP_COLUMNS)}) FROM STDIN") as copy:
                for row in step_rows:
                    copy.write_row(row)
        baseline = time.perf_counter() - started
        transaction.set_rollback(True)

    mb = large.stat().st_size / 1e6
    print(
        f"Import benchmark on {vendor}: {args.traces} traces x {args.steps} steps ({mb:.0f} MB native JSONL)\n"
    )
    print(
        table(
            [
                (
                    "our import (parse+validate+hash+dedupe+insert)",
                    f"{ours:.2f}",
                    f"{args.traces / ours:,.0f}",
                    f"{n_steps / ours:,.0f}",
                    f"{ours / baseline:.2f}x",
                ),
                (
                    "raw COPY of the same rows (baseline)",
                    f"{baseline:.2f}",
                    f"{args.traces / baseline:,.0f}",
                    f"{n_steps / baseline:,.0f}",
                    "1.00x",
                ),
            ],
            ("what", "seconds", "traces/s", "steps/s", "vs COPY"),
        )
    )
    print()
    print(
        table(
            [
                (
                    f"{small.name} ({small.stat().st_size / 1e6:.0f} MB)",
                    f"{small_peak / 1e6:.1f}",
                    f"{small_time:.2f}",
                ),
                (f"{large.name} ({mb:.0f} MB)", f"{large_peak / 1e6:.1f}", f"{ours:.2f}"),
            ],
            ("file", "peak process memory, max RSS (MB)", "seconds"),
        )
    )
    print(f"\nmemory growth for a 10x larger file: {large_peak / max(small_peak, 1):.2f}x (goal: flat)")
    shutil.rmtree(work, ignore_errors=True)
    print(
        f"goal: within 3x of raw COPY -> {'met' if ours / baseline <= 3 else 'NOT met'} ({ours / baseline:.2f}x)"
    )


def _child_import(path: Path, batch: str) -> tuple[float, int]:
    env = {**os.environ, "BENCH_REUSE_DB": "1"}
    output = subprocess.run(
        [sys.executable, __file__, "--child", str(path), batch],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(output[-2]), int(output[-1])


def child(path: str, batch: str) -> None:
    import resource

    setup_django(need_postgres=True, recreate=False)
    from traces.services import do_import_files

    started = time.perf_counter()
    do_import_files([(Path(path), Path(path).name)], batch_name=batch, keep_annotations=False)
    elapsed = time.perf_counter() - started
    print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def _jsonable(row: tuple) -> tuple:
    return tuple(json.dumps(value) if isinstance(value, dict | list) else value for value in row)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
