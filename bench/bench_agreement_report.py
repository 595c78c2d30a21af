"""Agreement report benchmark: 100,000 traces x 14 MAST modes x 2 annotators in PostgreSQL.

    python bench/bench_agreement_report.py [--traces 100000] [--boot 1000] [--baseline-resamples 20]

Measures, in one run on the same data:

1. the whole report, database -> stored AgreementReport (fingerprint query, three reads into the ratings
   tensor, every statistic of the report with --boot bootstrap resamples per mode, the JSON write), as
   `manage.py agreement` runs it (`do_request_report` + `do_compute_report`); goal: under 10 s;
2. the statistics alone (`binary_mode_agreement`, the per-mode table with kappa and alpha intervals) against
   the obvious baseline, reused from bench_agreement_stats.py: scikit-learn's `cohen_kappa_score` per mode
   and per bootstrap resample plus `krippendorff.alpha` per mode. The baseline runs --baseline-resamples
   resamples and is EXTRAPOLATED linearly to --boot (the table says so); goal: at least 50x faster.

Rows are inserted with COPY (traces, assignments, annotations, labels with one or two evidence steps), and
the tensor read back from the database is checked against the generated one before anything is timed.
"""

from __future__ import annotations

import argparse
import io
import json
import time

import numpy as np
from _setup import setup_django, table
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


def build_world(n_traces: int, seed: int):
    """A MAST project whose 2 annotators labelled n_traces traces (2% of annotations missing)."""
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
    with transaction.atomic():
        users = [User.objects.create(username=name) for name in ("bench-ann-a", "bench-ann-b")]
        project = Project.objects.create(slug="bench", name="Bench", taxonomy_version=version)
        for user in users:
            Membership.objects.create(project=project, user=user, role="annotator")
        batch = Batch.objects.create(name="bench", trace_count=n_traces)
        project.batches.add(batch)
        now = timezone.now()
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
            trace_ids = list(Trace.objects.filter(batch=batch).order_by("id").values_list("id", flat=True))
            present = ratings[:, :, 0] >= 0
            slots = [(i, j) for i, j in zip(*np.nonzero(present), strict=True)]
            _copy(
                cursor,
                Assignment,
                (
                    {
                        "project_id": project.pk,
                        "trace_id": trace_ids[i],
                        "annotator_id": users[j].pk,
                        "status": "submitted",
                    }
                    for i, j in slots
                ),
            )
            assignment = {
                (t, a): pk
                for pk, t, a in Assignment.objects.filter(project=project).values_list(
                    "id", "trace_id", "annotator_id"
                )
            }
            _copy(
                cursor,
                Annotation,
                (
                    {
                        "assignment_id": assignment[(trace_ids[i], users[j].pk)],
                        "status": "submitted",
                        "no_failure": not (ratings[i, j] == 1).any(),
                        "submitted_at": now,
                    }
                    for i, j in slots
                ),
            )
            annotation = dict(
                Annotation.objects.filter(assignment__project=project).values_list("assignment_id", "id")
            )
            items, raters, modes = np.nonzero(ratings == 1)
            steps = rng.integers(0, 20, size=(len(items), 2))
            two = rng.random(len(items)) < 0.1
            _copy(
                cursor,
                LabelApplication,
                (
                    {
                        "annotation_id": annotation[assignment[(trace_ids[i], users[j].pk)]],
                        "mode_id": mode_ids[m],
                        "evidence": [{"step": int(s)} for s in (steps[k] if two[k] else steps[k, :1])],
                    }
                    for k, (i, j, m) in enumerate(
                        zip(items.tolist(), raters.tolist(), modes.tolist(), strict=True)
                    )
                ),
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return project, ratings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--baseline-resamples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    vendor = setup_django(need_postgres=True)

    from django.conf import settings

    settings.AGREEMENT_BOOTSTRAP = args.boot
    from annotator.agreement.stats import binary_mode_agreement
    from annotator.services.report_data import load_report_input
    from annotator.services.reports import do_compute_report, do_request_report, inputs_fingerprint

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

    # 1. The whole report, from the database to the stored row (best of 3; each run is a fresh report).
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        report = do_request_report(project, {}, force=True, enqueue=False)
        report = do_compute_report(report.pk)
        runs.append(time.perf_counter() - t0)
        assert report.status == "succeeded", report.error
    t_whole = min(runs)
    t_fingerprint, _ = timed(lambda: inputs_fingerprint(project, {}))
    t_load, _ = timed(lambda: load_report_input(project, {}))
    from annotator.agreement.report import build_report
    from annotator.services.reports import report_settings

    t_build, _ = timed(lambda: build_report(loaded.data, report_settings()))
    size = len(json.dumps(report.results))
    print(
        table(
            [
                (
                    "whole report: DB -> stored AgreementReport (best of 3)",
                    f"{t_whole:.2f}",
                    "goal < 10 s: " + ("met" if t_whole < 10 else "NOT met"),
                ),
                ("  of which: fingerprint (1 aggregate query)", f"{t_fingerprint:.2f}", ""),
                ("  of which: DB -> ratings tensor + evidence (3 queries)", f"{t_load:.2f}", ""),
                (
                    "  of which: every statistic of the report (build_report)",
                    f"{t_build:.2f}",
                    f"{size / 1e3:.0f} kB of JSON",
                ),
                ("  all runs", " / ".join(f"{r:.2f}" for r in runs), ""),
            ],
            ("what", "seconds", "note"),
        )
    )
    print()

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
    print(
        f"goal: statistics at least 50x faster than the baseline -> {'met' if ratio >= 50 else 'NOT met'} ({ratio:.0f}x)"
    )
    buffer = io.StringIO()
    first = report.results["modes"][0]
    buffer.write(
        f"sanity: {first['code']} kappa={first['cohen_kappa']['value']:.4f} "
        f"CI=[{first['kappa_ci']['low']:.4f}, {first['kappa_ci']['high']:.4f}]"
    )
    print(buffer.getvalue())


if __name__ == "__main__":
    main()
