"""Migration annotator 0032 gives every existing project exactly the traces it held (all the traces of its
batches) as membership rows, and reverses by dropping them (issue 28)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotator", "0030_llm_triage"), ("traces", "0011_step_keyed_by_place")]
AFTER = [("annotator", "0032_project_traces")]


@pytest.mark.django_db(transaction=True)
def test_every_project_keeps_the_traces_of_its_batches():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Taxonomy = old.get_model("taxonomy", "Taxonomy")
    version = old.get_model("taxonomy", "TaxonomyVersion").objects.create(
        taxonomy=Taxonomy.objects.create(slug="t", name="T"), number=1
    )
    Project, Batch, Trace = (
        old.get_model(*name) for name in [("annotator", "Project"), ("traces", "Batch"), ("traces", "Trace")]
    )
    first = Project.objects.create(slug="first", name="First", taxonomy_version=version)
    second = Project.objects.create(slug="second", name="Second", taxonomy_version=version)
    empty = Project.objects.create(slug="empty", name="Empty", taxonomy_version=version)
    a, b, c = (Batch.objects.create(name=name) for name in "abc")
    for batch, n in [(a, 3), (b, 2), (c, 4)]:
        for i in range(n):
            Trace.objects.create(batch=batch, external_id=f"{batch.name}{i}", content_hash=f"{batch.name}{i}")
    first.batches.add(a, b)
    second.batches.add(b)
    before = {
        p.slug: set(Trace.objects.filter(batch__projects=p).values_list("pk", flat=True))
        for p in (first, second, empty)
    }

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    NewTrace = new.get_model("traces", "Trace")
    after = {
        slug: set(NewTrace.objects.filter(project_rows__project__slug=slug).values_list("pk", flat=True))
        for slug in before
    }
    assert after == before
    assert [len(after[slug]) for slug in ("first", "second", "empty")] == [5, 2, 0]

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)  # reversed: the table goes, the batches say again what a project holds
    assert "annotator_projecttrace" not in connection.introspection.table_names()
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # back to the latest schema for the next tests
