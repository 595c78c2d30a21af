"""The import job moved from `traces` to `annotator`: existing rows are copied, and the project slug that
sat in their JSON options becomes the project foreign key (data migration annotator 0005)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotator", "0013_jobs"), ("traces", "0006_content_hash_independent_of_format")]
AFTER = [("annotator", "0014_copy_import_jobs")]


@pytest.mark.django_db(transaction=True)
def test_import_jobs_are_copied_with_their_project_as_a_key():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old_apps = executor.loader.project_state(BEFORE).apps
    OldJob = old_apps.get_model("traces", "ImportJob")
    Project = old_apps.get_model("annotator", "Project")
    TaxonomyVersion = old_apps.get_model("taxonomy", "TaxonomyVersion")
    Taxonomy = old_apps.get_model("taxonomy", "Taxonomy")
    version = TaxonomyVersion.objects.create(taxonomy=Taxonomy.objects.create(slug="t", name="T"), number=1)
    project = Project.objects.create(slug="p", name="P", taxonomy_version=version)
    mine = OldJob.objects.create(
        batch_name="b", options={"project": "p", "ignore_unknown_modes": True}, status="succeeded"
    )
    orphan = OldJob.objects.create(batch_name="c", options={"project": "gone"}, status="running")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    NewJob = executor.loader.project_state(AFTER).apps.get_model("annotator", "ImportJob")
    copied = {job.pk: job for job in NewJob.objects.all()}
    assert copied[mine.pk].project_id == project.pk
    assert copied[mine.pk].options == {"ignore_unknown_modes": True} and copied[mine.pk].status == "succeeded"
    assert copied[orphan.pk].project_id is None and copied[orphan.pk].status == "running"

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # back to the latest schema for the next tests
