"""Taxonomies through the CLI: built-ins load idempotently, export/import round-trips, bad files change nothing."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from taxonomy.models import FailureMode, Taxonomy, TaxonomyVersion
from tests.factories import ProjectFactory


def export(slug: str, fmt: str = "json") -> str:
    out = StringIO()
    call_command("export_taxonomy", slug, "--format", fmt, stdout=out)
    return out.getvalue()


def test_it_loads_the_builtins_once(db):
    call_command("load_taxonomies", stdout=StringIO())
    call_command("load_taxonomies", stdout=StringIO())
    assert set(Taxonomy.objects.values_list("slug", flat=True)) >= {"mast", "agent-failures-6", "kami"}
    assert TaxonomyVersion.objects.filter(taxonomy__slug="mast").count() == 1


def test_mast_exports_fourteen_modes_in_three_categories(taxonomies):
    data = json.loads(export("mast"))
    assert [c["code"] for c in data["categories"]] == ["FC1", "FC2", "FC3"]
    codes = [m["code"] for c in data["categories"] for m in c["modes"]]
    assert codes == [f"FM-{c}.{m}" for c, n in ((1, 5), (2, 6), (3, 3)) for m in range(1, n + 1)]
    assert data["labelling_mode"] == "multi_label"


def test_six_mode_taxonomy_is_single_primary_with_subtypes(taxonomies):
    version = taxonomies["agent-failures-6"]
    assert version.labelling_mode == "single_primary"
    tool_misuse = FailureMode.objects.get(version=version, name="Tool misuse")
    assert tool_misuse.subtypes.count() == 3
    assert FailureMode.objects.filter(version=version, parent=None).count() == 7


def test_kami_has_four_archetypes(taxonomies):
    assert FailureMode.objects.filter(version=taxonomies["kami"]).count() == 4


@pytest.mark.parametrize("fmt,suffix", [("json", "json"), ("yaml", "yaml")])
def test_export_then_import_under_a_new_slug_is_identical(taxonomies, tmp_path, fmt, suffix):
    path = tmp_path / f"mast.{suffix}"
    path.write_text(export("mast", fmt))
    call_command("import_taxonomy", str(path), "--slug", "mast-copy", stdout=StringIO())
    original, copy = json.loads(export("mast")), json.loads(export("mast-copy"))
    assert copy.pop("slug") == "mast-copy"
    original.pop("slug")
    assert copy == original


def test_a_broken_file_names_the_field_and_changes_nothing(taxonomies, tmp_path):
    data = json.loads(export("mast"))
    data["slug"] = "broken"
    del data["categories"][1]["modes"][2]["definition"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    before = (Taxonomy.objects.count(), FailureMode.objects.count())
    with pytest.raises(CommandError) as error:
        call_command("import_taxonomy", str(path), stdout=StringIO())
    assert "categories[1].modes[2].definition" in str(error.value)
    assert error.value.returncode == 2
    assert (Taxonomy.objects.count(), FailureMode.objects.count()) == before


def test_a_version_in_use_is_frozen_and_an_edit_makes_a_new_version(taxonomies, tmp_path):
    ProjectFactory(taxonomy_version=taxonomies["kami"])
    data = json.loads(export("kami"))
    data["modes"][0]["definition"] += " Edited."
    path = tmp_path / "kami.json"
    path.write_text(json.dumps(data))
    call_command("import_taxonomy", str(path), stdout=StringIO())
    versions = TaxonomyVersion.objects.filter(taxonomy__slug="kami").order_by("number")
    assert [v.number for v in versions] == [1, 2]
    first, second = versions
    assert not FailureMode.objects.get(version=first, code="KAMI-1").definition.endswith("Edited.")
    assert FailureMode.objects.get(version=second, code="KAMI-1").definition.endswith("Edited.")


def test_an_unused_version_is_edited_in_place(taxonomies, tmp_path):
    data = json.loads(export("kami"))
    data["modes"][1]["name"] = "Over-helpfulness, renamed"
    path = tmp_path / "kami.json"
    path.write_text(json.dumps(data))
    call_command("import_taxonomy", str(path), stdout=StringIO())
    assert TaxonomyVersion.objects.filter(taxonomy__slug="kami").count() == 1
    assert FailureMode.objects.filter(name="Over-helpfulness, renamed").exists()


def test_exporting_an_unknown_taxonomy_fails_clearly(db):
    with pytest.raises(CommandError, match="No taxonomy 'nope'"):
        export("nope")
