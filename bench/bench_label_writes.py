"""Bulk label writes with the summary triggers (migrations 0020-0025) against the same writes without them.

    python bench/bench_label_writes.py [--traces 100000] [--million] [--migration-traces 5000] [--repeat 1]

Measures, each in a fresh database of its own (a child process), the same writes twice: with the label and
gold summary triggers on, and with them disabled (`ALTER TABLE ... DISABLE TRIGGER` of those triggers only):

1. the fixture of bench_agreement_report.py (COPY of traces, assignments, annotations, then labels with their
   evidence: one statement per table) at --traces traces, and at 1,000,000 with --million (minutes on a
   2-core machine, so `make bench` leaves it out);
2. a taxonomy migration through the service (`do_apply_migration`, as the codebook page applies it) on a
   project of --migration-traces traces: the most frequent mode (in about a third of the annotations) is
   renamed and merged with the next most frequent one. Every label of the project moves to the new version:
   one UPDATE per kept mode across the project, and per annotation carrying a merged mode its labels
   rewritten, its version bumped and its history written (0 leaves it out). Timed inside a transaction that
   is then rolled back: the follow-ups its commit starts (the adjudication check and the report refresh,
   inline without a Celery worker) are not label writes.

With --repeat N, each is run N times, with and without triggers in turn, and the fastest of each is kept (on
a machine shared with other jobs a single run's time varies by 1.5x).

Goals: the writes with triggers within 3x of the same writes without; the fixture at 100,000 traces in under
2 minutes. Without triggers the summary is wrong, so the table also shows the honest equivalent: the writes
without triggers plus the summary computed once from scratch for every annotation. The run with triggers
checks that its summary equals one computed from scratch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from _setup import CHILD_ENV, goal, setup_django, table

SUMMARY_TRIGGERS = "tgname LIKE 'labelsummary\\_%' OR tgname LIKE 'goldsummary\\_%'"
FROM_SCRATCH = "SELECT annotator_labelsummary_refresh(ARRAY(SELECT id FROM annotator_annotation))"
SUMMARY_DIGEST = (
    "SELECT count(*), md5(string_agg(s::text, '|' ORDER BY s.annotation_id)) FROM annotator_labelsummary s"
)


def _set_triggers(enabled: bool) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal AND ({SUMMARY_TRIGGERS})"
        )
        for relation, name in cursor.fetchall():
            cursor.execute(f"ALTER TABLE {relation} {'ENABLE' if enabled else 'DISABLE'} TRIGGER {name}")


def _from_scratch(check: bool) -> tuple[float, bool | None]:
    """Seconds to compute the label summary of every annotation at once; with `check`, whether it equals
    the summary the triggers kept."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute(SUMMARY_DIGEST)
        kept = cursor.fetchone()
        with transaction.atomic():
            cursor.execute("DELETE FROM annotator_labelsummary")
            t0 = time.perf_counter()
            cursor.execute(FROM_SCRATCH)
            seconds = time.perf_counter() - t0
        cursor.execute(SUMMARY_DIGEST)
        return seconds, (kept == cursor.fetchone()) if check else None


def child_fixture(n_traces: int, triggers: bool) -> dict:
    setup_django(need_postgres=True)
    from bench_agreement_report import build_world

    from taxonomy.services import load_builtin_taxonomies

    load_builtin_taxonomies()
    _set_triggers(triggers)
    t0 = time.perf_counter()
    _, ratings = build_world(n_traces, 0, vacuum=False)
    seconds = time.perf_counter() - t0
    _set_triggers(True)
    scratch, equal = _from_scratch(check=triggers)
    return {
        "seconds": seconds,
        "scratch": scratch,
        "equal": equal,
        "annotations": int((ratings[:, :, 0] >= 0).sum()),
        "labels": int((ratings == 1).sum()),
    }


def _migration_changes(project) -> tuple[list[dict], str, float]:
    """Rename the most frequent mode and merge the next one into it; (changes, mode, share of annotations)."""
    from django.db.models import Count

    from annotator.models import Annotation, LabelApplication

    counts = list(
        LabelApplication.objects.filter(annotation__assignment__project=project)
        .values_list("mode__code")
        .annotate(n=Count("id"))
        .order_by("-n", "mode__code")[:2]
    )
    (first, n_first), (second, _) = counts
    share = n_first / Annotation.objects.filter(assignment__project=project).count()
    renamed = f"{first}-R"
    changes = [
        {"op": "rename", "code": first, "new_code": renamed},
        {"op": "merge", "codes": [renamed, second]},
    ]
    return changes, first, share


def child_migration(n_traces: int, triggers: bool) -> dict:
    setup_django(need_postgres=True)
    from bench_agreement_report import build_world
    from django.db import connection, transaction

    from annotator.services.evolution import do_apply_migration, do_preview_migration, mapping_text

    project, _ = build_world(n_traces, 0)
    changes, mode, share = _migration_changes(project)
    migration = do_preview_migration(project, changes)
    # Rolled back at the end: the follow-ups a commit starts (adjudication check, report refresh: inline
    # without a Celery worker) are not label writes.
    with transaction.atomic():
        _set_triggers(triggers)
        t0 = time.perf_counter()
        migration = do_apply_migration(migration, mapping_text(migration.mapping))
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the foreign keys a commit would check
        seconds = time.perf_counter() - t0
        _set_triggers(True)
        scratch, equal = _from_scratch(check=triggers)
        transaction.set_rollback(True)
    return {
        "seconds": seconds,
        "scratch": scratch,
        "equal": equal,
        "mode": mode,
        "share": share,
        "annotations": migration.summary["annotations"],
    }


def _run_child(kind: str, n_traces: int, triggers: bool) -> dict:
    """One measurement in a child process with a database of its own (the parent's is not inherited)."""
    env = {k: v for k, v in os.environ.items() if k != CHILD_ENV}
    args = [sys.executable, __file__, "--child", kind, "--traces", str(n_traces)]
    args += ["--triggers", "on" if triggers else "off"]
    result = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{kind} at {n_traces:,} traces failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _runs(seconds: list[float]) -> str:
    return ", ".join(f"{s:.1f}" for s in seconds)


def _rows(what: str, on: dict, off: dict) -> tuple[list[tuple], float]:
    ratio = on["seconds"] / off["seconds"]
    honest = off["seconds"] + off["scratch"]
    rows = [
        (f"{what}, summary triggers off", f"{off['seconds']:.1f}", "1.0x", ""),
        (
            f"{what}, triggers off + summary from scratch once",
            f"{honest:.1f}",
            f"{honest / off['seconds']:.2f}x",
            f"from scratch {off['scratch']:.1f} s",
        ),
        (
            f"{what}, summary triggers on",
            f"{on['seconds']:.1f}",
            f"{ratio:.2f}x",
            f"{on['seconds'] / honest:.2f}x the honest baseline; summary equals from scratch: {on['equal']}",
        ),
    ]
    if len(on["all"]) > 1:
        rows.append(("  every run, off / on", "", "", f"{_runs(off['all'])} / {_runs(on['all'])}"))
    return rows, ratio


def _best(kind: str, n_traces: int, repeat: int) -> tuple[dict, dict]:
    """(with triggers, without): the fastest of `repeat` runs of each, taken in turn (off, on, off, on...)
    so that a change in the machine's load falls on both."""
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for _ in range(repeat):
        for triggers in (False, True):
            runs[triggers].append(_run_child(kind, n_traces, triggers))
    on, off = (min(runs[t], key=lambda r: r["seconds"]) for t in (True, False))
    on = {**on, "equal": all(r["equal"] for r in runs[True]), "all": [r["seconds"] for r in runs[True]]}
    off = {
        **off,
        "scratch": min(r["scratch"] for r in runs[False]),
        "all": [r["seconds"] for r in runs[False]],
    }
    return on, off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--million", action="store_true", help="also the fixture at 1,000,000 traces")
    parser.add_argument("--migration-traces", type=int, default=5_000, help="0 leaves the migration out")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, the fastest kept")
    parser.add_argument("--child", choices=("fixture", "migration"), help=argparse.SUPPRESS)
    parser.add_argument("--triggers", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run = child_fixture if args.child == "fixture" else child_migration
        print(json.dumps(run(args.traces, args.triggers == "on")))
        return

    rows: list[tuple] = []
    goals: list[tuple] = []  # printed after the table
    sizes = [args.traces, *([1_000_000] if args.million and args.traces != 1_000_000 else [])]
    for n in sizes:
        on, off = _best("fixture", n, args.repeat)
        what = f"fixture COPY, {n:,} traces ({on['annotations']:,} annotations, {on['labels']:,} labels)"
        fixture_rows, ratio = _rows(what, on, off)
        rows += fixture_rows
        goals.append(
            (
                f"fixture COPY with summary triggers, {n:,} traces",
                f"{ratio:.2f}x",
                "<= 3x without",
                ratio <= 3,
            )
        )
        if n == 100_000:
            goals.append(
                (
                    "bench_agreement_report fixture, 100,000 traces",
                    f"{on['seconds']:.1f} s",
                    "< 120 s",
                    on["seconds"] < 120 and on["equal"],
                )
            )
    n = args.migration_traces
    if n:
        on, off = _best("migration", n, args.repeat)
        what = (
            f"taxonomy migration, {n:,} traces ({on['mode']} in {on['share']:.0%} of annotations renamed and "
            f"merged; {on['annotations']:,} annotations rewritten)"
        )
        migration_rows, ratio = _rows(what, on, off)
        rows += migration_rows
        goals.append(
            (
                f"taxonomy migration with summary triggers, {n:,} traces",
                f"{ratio:.2f}x",
                "<= 3x without",
                ratio <= 3,
            )
        )
    best = f"the fastest of {args.repeat} runs each, taken in turn" if args.repeat > 1 else "one run each"
    print(
        f"Bulk label writes with and without the summary triggers on PostgreSQL ({best}; each run in a fresh database)\n"
    )
    print(table(rows, ("writes", "seconds", "vs triggers off", "note")))
    print()
    for args_ in goals:
        goal(*args_)


if __name__ == "__main__":
    main()
