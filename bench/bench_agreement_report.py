"""Agreement report benchmark: 100,000 (or --traces 1000000) traces x 14 MAST modes x 2 annotators in PostgreSQL.

    python bench/bench_agreement_report.py [--traces 100000] [--boot 1000] [--baseline-resamples 20]

Measures, in one run on the same data:

1. the whole report, database -> stored AgreementReport, computed in full (fingerprint query, three binary
   COPY reads into numpy, the distinct item rows, every statistic with --boot bootstrap resamples per
   mode, the JSON write), as `manage.py agreement` runs it; goals: under 10 s, and under 2 GB peak memory
   (measured in a child process that computes it alone);
   then, after one more submitted annotation (through the annotation service), the incremental refresh
   (`do_refresh_reports`, the Celery task's body); goal: under 1 s, and its report equals a full one;
   and the report page answering from the stored report (a real GET of /p/<slug>/agreement/);
   goal: under 300 ms;
2. the statistics alone (`binary_mode_agreement`, the per-mode table with kappa and alpha intervals) against
   the obvious baseline, reused from bench_agreement_stats.py: scikit-learn's `cohen_kappa_score` per mode
   and per bootstrap resample plus `krippendorff.alpha` per mode. The baseline runs --baseline-resamples
   resamples and is EXTRAPOLATED linearly to --boot (the table says so); goal: at least 50x faster.

Rows are inserted with COPY (traces, assignments, annotations, labels with one or two evidence steps; the
annotations dated three days back, as in a project labelled over weeks), and the tensor read back from the
database is checked against the generated one before anything is timed. `--baseline-resamples 0` skips
the library baseline (2.), which takes minutes at a million traces.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from _setup import goal, setup_django, table
from bench_agreement_stats import baseline, make_ratings, timed


def _copy(cursor, model, rows: list[dict]) -> None:
    """COPY rows into the model's table; a column not given takes the field's default (or now())."""
    from django.utils import timezone

    now = timezone.now()
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = [f.column for f in fields]
    quoted = ", ".join(f'"{c}"' for c in columns)  # "primary" is a reserved word
    defaults = {}
    for f in fields:
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            defaults[f.column] = now
        elif f.has_default():
            defaults[f.column] = f.get_default()
        elif not f.null and f.get_internal_type() in ("CharField", "TextField", "SlugField"):
            defaults[f.column] = ""
        else:
            defaults[f.column] = None
    json_columns = {f.column for f in fields if f.get_internal_type() == "JSONField"}
    with cursor.copy(f"COPY {model._meta.db_table} ({quoted}) FROM STDIN") as copy:
        for row in rows:
            values = []
            for column in columns:
                value = row.get(column, defaults[column])
                if column in json_columns and value is not None:
                    value = json.dumps(value)
                values.append(value)
            copy.write_row(values)


def build_world(n_traces: int, seed: int, *, vacuum: bool = True):
    """A MAST project whose 2 annotators labelled n_traces traces (2% of annotations missing); `vacuum=False`
    leaves out the closing VACUUM ANALYZE (bench_label_writes.py times the writes alone).

    Every table is written with COPY; ids come back in COPY order (one sequence, one statement), so the
    rows of the next table are built from arrays, with no per-row lookups."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator.models import Annotation, Assignment, LabelApplication, Membership, Project
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.models import Batch, Trace

    load_builtin_taxonomies()
    version = resolve_version("mast")
    mode_ids = list(version.modes.order_by("order", "id").values_list("id", flat=True))
    ratings = make_ratings(n_traces, 2, len(mode_ids), seed)
    rng = np.random.default_rng(seed + 1)
    User = get_user_model()
    labelled_at = timezone.now() - dt.timedelta(days=3)
    with transaction.atomic():
        users = [User.objects.create(username=name) for name in ("bench-ann-a", "bench-ann-b")]
        owner = User.objects.create(username="bench-owner")
        project = Project.objects.create(slug="bench", name="Bench", taxonomy_version=version)
        for user in users:
            Membership.objects.create(project=project, user=user, role="annotator")
        Membership.objects.create(project=project, user=owner, role="owner")
        batch = Batch.objects.create(name="bench", trace_count=n_traces)
        project.batches.add(batch)
        with connection.cursor() as cursor:
            _copy(
                cursor,
                Trace,
                (
                    {
                        "batch_id": batch.pk,
                        "external_id": f"t{i}",
                        "content_hash": f"{i:064x}",
                        "step_count": 20,
                    }
                    for i in range(n_traces)
                ),
            )
            trace_ids = np.array(
                Trace.objects.filter(batch=batch).order_by("id").values_list("id", flat=True), dtype=np.int64
            )
            present = ratings[:, :, 0] >= 0
            slot_item, slot_rater = np.nonzero(present)
            user_ids = np.array([u.pk for u in users], dtype=np.int64)
            _copy(
                cursor,
                Assignment,
                (
                    {"project_id": project.pk, "trace_id": t, "annotator_id": a, "status": "submitted"}
                    for t, a in zip(trace_ids[slot_item].tolist(), user_ids[slot_rater].tolist(), strict=True)
                ),
            )
            assignment_ids = np.array(
                Assignment.objects.filter(project=project).order_by("id").values_list("id", flat=True),
                dtype=np.int64,
            )
            nothing = ~(ratings[slot_item, slot_rater] == 1).any(axis=1)
            _copy(
                cursor,
                Annotation,
                (
                    {
                        "assignment_id": a,
                        "status": "submitted",
                        "no_failure": bool(n),
                        "submitted_at": labelled_at,
                        "created_at": labelled_at,
                        "updated_at": labelled_at,
                    }
                    for a, n in zip(assignment_ids.tolist(), nothing.tolist(), strict=True)
                ),
            )
            annotation_ids = np.array(
                Annotation.objects.filter(assignment__project=project)
                .order_by("id")
                .values_list("id", flat=True),
                dtype=np.int64,
            )
            slot_of = np.full(present.shape, -1, dtype=np.int64)
            slot_of[slot_item, slot_rater] = np.arange(len(slot_item))
            items, raters, modes = np.nonzero(ratings == 1)
            label_annotation = annotation_ids[slot_of[items, raters]].tolist()
            label_mode = np.array(mode_ids, dtype=np.int64)[modes].tolist()
            steps = rng.integers(0, 20, size=(len(items), 2)).tolist()
            two = (rng.random(len(items)) < 0.1).tolist()
            _copy(
                cursor,
                LabelApplication,
                (
                    {
                        "annotation_id": label_annotation[k],
                        "mode_id": label_mode[k],
                        "evidence": [{"step": s} for s in (steps[k] if two[k] else steps[k][:1])],
                    }
                    for k in range(len(label_mode))
                ),
            )
    if not vacuum:
        return project, ratings
    with connection.cursor() as cursor:
        # What autovacuum does on its own within minutes of a bulk load (it is off on the shared development
        # server): without it, every scan of the label summary also reads the row versions the label COPY
        # replaced (the triggers rewrite each annotation's row), about half the table.
        cursor.execute("VACUUM ANALYZE")
    return project, ratings


def one_more_annotation(project, ratings: np.ndarray) -> None:
    """Submit, through the annotation service, the annotation of a trace that one rater had not done
    (the bench stores no Step rows, so the label pins no step)."""
    from django.contrib.auth import get_user_model

    from annotator.models import Assignment
    from annotator.services.annotations import do_submit_annotation
    from annotator.services.payload import AnnotationPayload, LabelInput
    from traces.models import Trace

    present = ratings[:, :, 0] >= 0
    item, rater = np.argwhere(present.any(axis=1)[:, None] & ~present)[0]
    trace = Trace.objects.in_project(project).order_by("id")[int(item)]
    user = get_user_model().objects.get(username=("bench-ann-a", "bench-ann-b")[rater])
    assignment = Assignment.objects.create(project=project, trace=trace, annotator=user)
    payload = AnnotationPayload(
        labels=(LabelInput(mode="FM-1.3", primary=False, evidence=()),), no_failure=False
    )
    do_submit_annotation(assignment, payload, actor=user, base_version=0)


def child_report() -> None:
    """Compute one full report in this process and print its peak memory (for the parent to read)."""
    setup_django(need_postgres=True)
    from annotator.models import Project, ReportRows
    from annotator.services.reports import do_compute_report, do_request_report

    project = Project.objects.get(slug="bench")
    ReportRows.objects.filter(project=project).delete()
    t0 = time.perf_counter()
    report = do_compute_report(do_request_report(project, {}, force=True, enqueue=False).pk)
    seconds = time.perf_counter() - t0
    assert report.status == "succeeded", report.error
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mib": peak, "seconds": seconds}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--baseline-resamples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child-report", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_report:
        child_report()
        return
    vendor = setup_django(need_postgres=True)

    from django.conf import settings

    settings.AGREEMENT_BOOTSTRAP = args.boot
    from annotator.agreement.stats import binary_mode_agreement
    from annotator.services.reports import do_compute_report, do_request_report, inputs_fingerprint
    from annotator.services.reports.data import load_report_input

    started = time.perf_counter()
    project, ratings = build_world(args.traces, args.seed)
    t_insert = time.perf_counter() - started
    loaded = load_report_input(project, {})
    annotated = ratings[(ratings[:, :, 0] >= 0).any(axis=1)]  # traces nobody annotated are not items
    assert np.array_equal(loaded.data.ratings, annotated), (
        "the tensor read back differs from the generated one"
    )
    n_labels = int((ratings == 1).sum())
    print(
        f"Agreement report benchmark on {vendor}: {args.traces:,} traces x 14 modes x 2 annotators "
        f"({int((ratings[:, :, 0] >= 0).sum()):,} annotations, {n_labels:,} labels; inserted with COPY in "
        f"{t_insert:.1f} s); {args.boot} bootstrap resamples per mode\n"
    )

    # 1. The whole report, from the database to the stored row, in full (each run is a fresh report and
    # starts without stored rows). Best of 3; one run above 200,000 traces.
    from annotator.models import ReportRows
    from annotator.services.reports import do_refresh_reports

    runs = []
    for _ in range(3 if args.traces <= 200_000 else 1):
        ReportRows.objects.filter(project=project).delete()
        t0 = time.perf_counter()
        report = do_request_report(project, {}, force=True, enqueue=False)
        report = do_compute_report(report.pk)
        runs.append(time.perf_counter() - t0)
        assert report.status == "succeeded", report.error
    t_whole = min(runs)
    t_fingerprint, _ = timed(lambda: inputs_fingerprint(project, {}))
    t_load, _ = timed(lambda: load_report_input(project, {}))
    from annotator.agreement.report import build_report_from_rows, compress
    from annotator.services.reports import report_settings

    t_compress, (rows, _) = timed(lambda: compress(loaded.data, report_settings().windows))
    t_build, _ = timed(
        lambda: build_report_from_rows(rows, loaded.data.raters, loaded.data.modes, report_settings())
    )
    size = len(json.dumps(report.results))

    child = subprocess.run(
        [sys.executable, __file__, "--child-report"],
        capture_output=True,
        text=True,
        env=os.environ,
        check=True,
    )
    memory = json.loads(child.stdout.strip().splitlines()[-1])

    # After one more submitted annotation: the incremental refresh (the stored rows exist: the child's
    # full computation wrote them), then the page from the stored report.
    one_more_annotation(project, ratings)
    t0 = time.perf_counter()
    refreshed = do_refresh_reports(project.pk)
    t_refresh = time.perf_counter() - t0
    assert refreshed.status == "succeeded", refreshed.error
    ReportRows.objects.filter(project=project).delete()
    full = do_compute_report(do_request_report(project, {}, force=True, enqueue=False).pk)
    equal = _same(refreshed.results, full.results)
    t_page = _page_time(project)

    print(
        table(
            [
                ("whole report in full: DB -> stored AgreementReport (best)", f"{t_whole:.2f}", ""),
                ("  of which: fingerprint (1 aggregate query)", f"{t_fingerprint:.2f}", ""),
                ("  of which: DB -> ratings tensor + evidence (3 binary COPY reads)", f"{t_load:.2f}", ""),
                (
                    "  of which: distinct item rows (compress)",
                    f"{t_compress:.2f}",
                    f"{len(rows.weight):,} rows",
                ),
                (
                    "  of which: every statistic from the rows",
                    f"{t_build:.2f}",
                    f"{size / 1e3:.0f} kB of JSON",
                ),
                ("  all runs", " / ".join(f"{r:.2f}" for r in runs), ""),
                (
                    "whole report in full, alone in a process",
                    f"{memory['seconds']:.2f}",
                    f"peak {memory['peak_mib']:.0f} MiB",
                ),
                (
                    "one more annotation -> refreshed report (incremental)",
                    f"{t_refresh:.2f}",
                    f"equals full: {equal}",
                ),
                ("report page from the stored report (GET, best of 5)", f"{t_page:.3f}", ""),
            ],
            ("what", "seconds", "note"),
        )
    )
    n = f"{args.traces:,} traces"
    goal(f"agreement report in full, {n}", f"{t_whole:.2f} s", "< 10 s", t_whole < 10)
    goal(
        f"agreement report peak memory, {n}",
        f"{memory['peak_mib']:.0f} MiB",
        "< 2048 MiB",
        memory["peak_mib"] < 2048,
    )
    goal(
        f"report current after one more annotation (incremental), {n}",
        f"{t_refresh:.2f} s",
        "< 1 s, equal to full",
        t_refresh < 1 and equal,
    )
    goal(f"report page from the stored report, {n}", f"{t_page * 1000:.0f} ms", "< 300 ms", t_page < 0.3)
    print()
    if args.baseline_resamples <= 0:
        return

    # 2. The statistics alone against the library loop, on the tensor read from the database.
    r = loaded.data.ratings
    t_stats = min(
        timed(lambda: binary_mode_agreement(r, n_boot=args.boot, seed=args.seed))[0] for _ in range(3)
    )
    b_point, b_boot, b_alpha, b_measured = baseline(r, args.boot, args.baseline_resamples, args.seed)
    b_total = b_point + b_boot + b_alpha
    ratio = b_total / t_stats
    print(
        table(
            [
                ("baseline: sklearn cohen_kappa_score x 14 modes (point)", f"{b_point:.2f}", ""),
                (
                    f"baseline: sklearn x 14 modes x {args.boot} resamples (EXTRAPOLATED from {args.baseline_resamples})",
                    f"{b_boot:.2f}",
                    "",
                ),
                ("baseline: krippendorff.alpha x 14 modes (point only)", f"{b_alpha:.2f}", ""),
                ("baseline total", f"{b_total:.2f}", "1.0x"),
                (
                    f"ours: binary_mode_agreement, n_boot={args.boot} (kappa and alpha CIs)",
                    f"{t_stats:.3f}",
                    f"{ratio:.0f}x",
                ),
                (
                    "ours: the whole report's statistics (build_report)",
                    f"{t_build:.3f}",
                    f"{b_total / t_build:.0f}x",
                ),
            ],
            ("statistics only", "seconds", "vs baseline"),
        )
    )
    print(f"\nbaseline wall time actually measured: {b_measured:.1f} s (resamples extrapolated linearly)")
    goal("statistics vs sklearn/krippendorff loop", f"{ratio:.0f}x faster", ">= 50x", ratio >= 50)
    buffer = io.StringIO()
    first = report.results["modes"][0]
    buffer.write(
        f"sanity: {first['code']} kappa={first['cohen_kappa']['value']:.4f} "
        f"CI=[{first['kappa_ci']['low']:.4f}, {first['kappa_ci']['high']:.4f}]"
    )
    print(buffer.getvalue())


def _same(a, b, path: str = "") -> bool:
    """Equal report JSON (floats to 1e-9), ignoring when and with what it was computed."""
    if isinstance(a, dict):
        keys = set(a) - {"computed_at", "software"}
        return keys == set(b) - {"computed_at", "software"} and all(_same(a[k], b[k]) for k in keys)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a))
    return a == b


def _page_time(project) -> float:
    """Best of 5 GETs of the report page by the project's owner (the stored report, nothing computed)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-owner"))
    url = f"/p/{project.slug}/agreement/"
    assert client.get(url).status_code == 200
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - t0)
        assert response.status_code == 200
    return min(times)


if __name__ == "__main__":
    main()
