"""Imported annotations with nothing usable, stored by imports before issue 32, are removed.

An import used to store a submitted annotation without any label for a record whose labels were all in
modes the taxonomy lacks (Who&When's attribution imported into a MAST project with --ignore-unknown-modes),
or that held only a note, an "ambiguous" flag or votes all left out. Every report read such an annotation
as "every mode not chosen", and it held one of the trace's overlap slots. An import no longer stores them
(annotator.services.label_import), and these rows go as if they had never been imported: the annotation,
its import history and the rater's slot (an imported rater's slot, or the slot of the account a staff member
mapped the rater to, which `do_assign` gives back at the next re-plan).

What stays: an annotation that says anything about a mode (a label, "no failure", per-mode votes of which
some were given) and everything made in the app (imports alone write a provenance "source"). Traces whose
adjudication has started (claimed once or decided) keep theirs: a person decided on what they showed. An
adjudication item that compared one and had not started is withdrawn, as the queue does (a "withdrawn"
gold-history row); the periodic reconciliation queues the trace again once its required annotations are in.

Reverse: nothing (the rows were empty; an import of the same file no longer creates them).
"""

from django.db import migrations
from django.db.models import Exists, OuterRef

_CHUNK = 500


def _empty_imported(apps):
    """(annotation id, assignment id, project id, trace id) of every imported annotation without a value for
    any mode of its project's taxonomy."""
    Annotation = apps.get_model("annotator", "Annotation")
    LabelApplication = apps.get_model("annotator", "LabelApplication")
    FailureMode = apps.get_model("taxonomy", "FailureMode")
    rows = (
        Annotation.objects.filter(status="submitted", no_failure=False, provenance__has_key="source")
        .exclude(Exists(LabelApplication.objects.filter(annotation_id=OuterRef("pk"))))
        .values_list(
            "pk",
            "assignment_id",
            "assignment__project_id",
            "assignment__trace_id",
            "assignment__project__taxonomy_version_id",
            "provenance",
        )
        .order_by("pk")
    )
    codes: dict[int, set[str]] = {}
    found = []
    for pk, assignment_id, project_id, trace_id, version_id, provenance in rows.iterator(chunk_size=2000):
        if version_id not in codes:
            codes[version_id] = set(
                FailureMode.objects.filter(version_id=version_id).values_list("code", flat=True)
            )
        missing = provenance.get("missing_modes") if isinstance(provenance, dict) else None
        if missing and codes[version_id] - set(missing):
            continue  # per-mode votes, some given: "not chosen" on those is what the rater said
        found.append((pk, assignment_id, project_id, trace_id))
    return found


def drop_empty_imported_annotations(apps, schema_editor):
    Assignment = apps.get_model("annotator", "Assignment")
    AdjudicationItem = apps.get_model("annotator", "AdjudicationItem")
    GoldHistory = apps.get_model("annotator", "GoldHistory")
    found = _empty_imported(apps)
    if not found:
        return
    by_trace: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for pk, assignment_id, project_id, trace_id in found:
        by_trace.setdefault((project_id, trace_id), []).append((pk, assignment_id))
    keys = list(by_trace)
    doomed: list[int] = []
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        items = AdjudicationItem.objects.filter(
            project_id__in={p for p, _ in chunk}, trace_id__in={t for _, t in chunk}
        )
        for item in items:
            key = (item.project_id, item.trace_id)
            if key not in by_trace:
                continue
            if item.claimed_by_id is not None or item.status == "resolved":
                del by_trace[key]  # a person decided on what these showed: kept as they were
                continue
            ids = {pk for pk, _ in by_trace[key]}
            if ids & set(item.annotation_ids or []):
                GoldHistory.objects.create(
                    project_id=item.project_id,
                    trace_id=item.trace_id,
                    item=None,
                    action="withdrawn",
                    before=[
                        {"mode": code, "source": source}
                        for code, source in item.gold_labels.order_by("mode__order").values_list(
                            "mode__code", "source"
                        )
                    ],
                    after=None,
                    note="An imported annotation with nothing usable was removed (issue 32)",
                )
                item.delete()
    for pairs in by_trace.values():
        doomed += [assignment_id for _, assignment_id in pairs]
    for start in range(0, len(doomed), _CHUNK):
        # The slot goes with its annotation (and the annotation's import history).
        Assignment.objects.filter(pk__in=doomed[start : start + _CHUNK]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0025_project_imported_labels_count_toward_overlap"),
        ("taxonomy", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(drop_empty_imported_annotations, migrations.RunPython.noop, elidable=True),
    ]
