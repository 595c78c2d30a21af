"""The codebook page, the taxonomy-migrations API and `manage.py migrate_taxonomy`: preview, confirm, and the
annotator's queue showing what to re-check."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from annotator.models import LabelApplication, ModeRecheck, TaxonomyMigration
from tests.factories import api_token
from tests.labels import project_trace, submit

SPLIT = """
- op: split
  code: FM-3.2
  into:
    - {code: FM-3.2a, name: No verification, definition: Nothing is checked.}
    - {code: FM-3.2b, name: Wrong verification, definition: The wrong thing is checked.}
- op: rename
  code: FM-1.1
  new_code: FM-1.1r
"""


@pytest.fixture
def labelled(project, annotator_a):
    trace = project_trace(project)
    return trace, submit(project, trace, annotator_a, {"FM-1.1": [1], "FM-3.2": [2]})


def test_an_owner_previews_then_confirms_on_the_page_and_the_annotator_sees_the_recheck(
    client, project, owner, annotator_a, labelled
):
    trace, annotation = labelled
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/codebook/")
    assert page.status_code == 200 and "Derive the next version" in page.content.decode()
    bad = client.post(f"/p/{project.slug}/codebook/preview/", {"changes": "- op: retire\n  code: FM-9\n"})
    assert (
        bad.status_code == 400 and "change 1 (retire): &#x27;FM-9&#x27; is not a mode" in bad.content.decode()
    )
    response = client.post(f"/p/{project.slug}/codebook/preview/", {"changes": SPLIT})
    migration = TaxonomyMigration.objects.get()
    assert (
        response.status_code == 302 and response["Location"] == f"/p/{project.slug}/codebook/{migration.pk}/"
    )
    preview = client.get(response["Location"]).content.decode()
    assert 'name="map:FM-3.2" value="FM-3.2a, FM-3.2b"' in preview and "split" in preview
    fields = {f"map:{code}": ", ".join(new) or "retire" for code, new in migration.mapping.items()}
    apply_url = f"/p/{project.slug}/codebook/{migration.pk}/apply/"
    unconfirmed = client.post(apply_url, fields)
    assert unconfirmed.status_code == 400 and "I checked this mapping" in unconfirmed.content.decode()
    missing = client.post(apply_url, {**fields, "map:FM-2.1": "", "confirm": "yes"})
    assert missing.status_code == 400 and "FM-2.1 is not mapped" in missing.content.decode()
    assert LabelApplication.objects.filter(annotation=annotation, mode__code="FM-1.1").exists()
    done = client.post(apply_url, {**fields, "confirm": "yes"})
    assert done.status_code == 302
    assert set(
        LabelApplication.objects.filter(annotation=annotation).values_list("mode__code", flat=True)
    ) == {"FM-1.1r"}
    client.force_login(annotator_a)
    queue = client.get(f"/p/{project.slug}/").content.decode()
    assert f"Re-check <code>FM-3.2a</code> on trace {trace.external_id}" in queue
    page = client.get(f"/p/{project.slug}/a/{annotation.assignment_id}/").content.decode()
    assert "re-check <code>FM-3.2a</code>" in page
    assert "FM-1.1 became FM-1.1r" in page and "Your labels were carried over" in page


def test_annotators_and_adjudicators_cannot_open_the_codebook(client, project, annotator_a, adjudicator):
    for user in (annotator_a, adjudicator):
        client.force_login(user)
        assert client.get(f"/p/{project.slug}/codebook/").status_code == 403
        assert client.post(f"/p/{project.slug}/codebook/preview/", {"changes": SPLIT}).status_code == 403
    assert not TaxonomyMigration.objects.exists()


def test_the_api_previews_and_applies_with_an_explicit_mapping(client, project, owner, annotator_a, labelled):
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(owner)}"}
    url = f"/api/projects/{project.slug}/taxonomy-migrations/"
    response = client.post(url, {"changes": yaml.safe_load(SPLIT)}, content_type="application/json", **auth)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "previewed" and body["mapping"]["FM-3.2"] == ["FM-3.2a", "FM-3.2b"]
    old = {row["code"]: row for row in body["old_modes"]}
    assert old["FM-1.1"]["kind"] == "renamed" and old["FM-1.1"]["labels"] == 1
    assert client.get(f"{url}{body['id']}/", **auth).json()["id"] == body["id"]
    mapping = {code: new or "retire" for code, new in body["mapping"].items()}
    refused = client.post(
        f"{url}{body['id']}/apply/",
        {"mapping": {**mapping, "FM-2.1": []}},
        content_type="application/json",
        **auth,
    )
    assert refused.status_code == 400 and "FM-2.1 is not mapped" in refused.json()["errors"][0]
    applied = client.post(
        f"{url}{body['id']}/apply/", {"mapping": mapping}, content_type="application/json", **auth
    )
    assert applied.status_code == 200 and applied.json()["summary"]["rechecks"] == 2
    bad = client.post(url, {"changes": [{"op": "grow"}]}, content_type="application/json", **auth)
    assert bad.status_code == 400 and "unknown op 'grow'" in bad.json()["errors"][0]
    schema = client.get("/api/schema/", **auth).content.decode()
    assert "/taxonomy-migrations/{migration_id}/apply/" in schema
    client.force_login(annotator_a)
    assert client.get(url).status_code == 403


def test_the_command_previews_and_applies(project, annotator_a, labelled, tmp_path):
    changes = tmp_path / "changes.yaml"
    changes.write_text(SPLIT, encoding="utf-8")
    out = io.StringIO()
    call_command("migrate_taxonomy", project.slug, "preview", str(changes), "--label", "1.1", stdout=out)
    migration = TaxonomyMigration.objects.get()
    text = out.getvalue()
    assert "FM-3.2\t-> FM-3.2a, FM-3.2b\tsplit\t1 labels" in text and f"apply {migration.pk}" in text
    assert migration.to_version.label == "1.1"
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("FM-1.1: FM-1.1r\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"FM-1\.2 is not mapped"):
        call_command("migrate_taxonomy", project.slug, "apply", str(migration.pk), "--mapping", str(mapping))
    with pytest.raises(CommandError, match="No taxonomy migration 999"):
        call_command("migrate_taxonomy", project.slug, "apply", "999", "--confirm-preview")
    out = io.StringIO()
    call_command(
        "migrate_taxonomy", project.slug, "apply", str(migration.pk), "--confirm-preview", stdout=out
    )
    assert "2 re-checks queued" in out.getvalue() and ModeRecheck.objects.count() == 2
    out = io.StringIO()
    call_command("migrate_taxonomy", project.slug, "list", stdout=out)
    assert "applied" in out.getvalue()


def test_a_group_of_proposals_drafts_an_add_and_settled_ones_are_linked_by_code(
    client, project, owner, annotator_a, labelled
):
    from annotator.models import ModeProposal
    from annotator.services.evolution import do_apply_migration, do_preview_migration, mapping_text

    trace, annotation = labelled
    first = ModeProposal.objects.create(
        project=project, trace=trace, author=annotator_a, text="Loops on one tool", suggested_name="tool loop"
    )
    client.force_login(owner)
    assert f"?proposals={first.pk}" in client.get(f"/p/{project.slug}/proposals/").content.decode()
    page = client.get(f"/p/{project.slug}/codebook/?proposals={first.pk}").content.decode()
    assert "name: tool loop" in page and f"- {first.pk}" in page
    ModeProposal.objects.filter(pk=first.pk).update(status="accepted", outcome="FM-2.7")
    change = {"op": "add", "code": "FM-2.7", "name": "Tool loop", "definition": "Loops.", "category": "FC2"}
    migration = do_preview_migration(project, [change])
    assert migration.proposals == {"FM-2.7": [first.pk]}
    do_apply_migration(migration, mapping_text(migration.mapping))
    first.refresh_from_db()
    assert first.mode.code == "FM-2.7" and ModeRecheck.objects.filter(annotation=annotation).exists()
