"""Data migration annotator 0026 (issue 32): imported annotations with nothing usable, stored by imports before
the fix, go with their slot, as if never imported; everything that says something about a mode stays, and so
does whatever a started adjudication was based on. The new project setting is off on existing projects."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotator", "0025_project_imported_labels_count_toward_overlap")]
AFTER = [("annotator", "0026_drop_empty_imported_annotations")]


@pytest.mark.django_db(transaction=True)
def test_empty_imported_annotations_are_removed_and_the_rest_kept():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    model = apps.get_model
    taxonomy = model("taxonomy", "Taxonomy").objects.create(slug="t", name="T")
    version = model("taxonomy", "TaxonomyVersion").objects.create(taxonomy=taxonomy, number=1)
    modes = {
        code: model("taxonomy", "FailureMode").objects.create(
            version=version, code=code, name=code, definition="d"
        )
        for code in ("M-1", "M-2")
    }
    project = model("annotator", "Project").objects.create(slug="p", name="P", taxonomy_version=version)
    assert project.imported_labels_count_toward_overlap is False
    batch = model("traces", "Batch").objects.create(name="b", format="native")
    project.batches.add(batch)
    User = model("auth", "User")
    rater = User.objects.create(username="ww/ww", is_active=False)
    model("annotator", "Rater").objects.create(user=rater, kind="imported", source="ww", name="ww")
    person = User.objects.create(username="ana")
    Trace, Assignment, Annotation = (
        model("traces", "Trace"),
        model("annotator", "Assignment"),
        model("annotator", "Annotation"),
    )

    def annotation(n, user=rater, *, labels=(), provenance=None, no_failure=False):
        trace = Trace.objects.create(batch=batch, external_id=f"t{n}", content_hash=f"{n:064x}")
        slot = Assignment.objects.create(project=project, trace=trace, annotator=user, status="submitted")
        made = Annotation.objects.create(
            assignment=slot,
            status="submitted",
            no_failure=no_failure,
            provenance={"source": "ww"} if provenance is None else provenance,
        )
        for code in labels:
            model("annotator", "LabelApplication").objects.create(annotation=made, mode=modes[code])
        model("annotator", "LabelHistory").objects.create(annotation=made, action="imported", after={})
        return made

    unknown_only = annotation(1, provenance={"source": "ww", "unknown_labels": [{"mode": "x", "steps": []}]})
    all_left_out = annotation(2, provenance={"source": "ww", "missing_modes": ["M-1", "M-2"]})
    labelled = annotation(3, labels=["M-1"])
    some_votes = annotation(4, provenance={"source": "ww", "missing_modes": ["M-2"]})
    said_no_failure = annotation(5, no_failure=True)
    made_here = annotation(6, person, provenance={})
    queued = annotation(7)
    decided = annotation(8)
    Item = model("annotator", "AdjudicationItem")
    Item.objects.create(
        project=project, trace=queued.assignment.trace, annotation_ids=[queued.pk], status="open"
    )
    Item.objects.create(
        project=project, trace=decided.assignment.trace, annotation_ids=[decided.pk], status="resolved"
    )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    left = set(apps.get_model("annotator", "Annotation").objects.values_list("pk", flat=True))
    assert left == {labelled.pk, some_votes.pk, said_no_failure.pk, made_here.pk, decided.pk}
    assert not left & {unknown_only.pk, all_left_out.pk, queued.pk}
    slots = set(
        apps.get_model("annotator", "Assignment").objects.values_list("trace__external_id", flat=True)
    )
    assert slots == {"t3", "t4", "t5", "t6", "t8"}  # the empty ones' slots went with them
    items = apps.get_model("annotator", "AdjudicationItem").objects
    assert list(items.values_list("trace__external_id", flat=True)) == ["t8"]  # the open one is withdrawn
    history = apps.get_model("annotator", "GoldHistory").objects.get()
    assert (history.action, history.trace.external_id, history.item_id) == ("withdrawn", "t7", None)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # back to the latest schema for the next tests
