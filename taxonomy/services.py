"""The verbs on taxonomies: load a spec into a version (idempotently) and turn a version back into a file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db import transaction

from taxonomy.models import Category, FailureMode, Taxonomy, TaxonomyVersion
from taxonomy.schema import TaxonomySpec, builtin_paths, dump_taxonomy, load_taxonomy_file, parse_taxonomy


def content_hash(spec: TaxonomySpec) -> str:
    """Fingerprint of everything but the slug, so a taxonomy re-imported under a new slug compares equal."""
    data = dump_taxonomy(spec)
    data.pop("slug", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@transaction.atomic
def do_load_taxonomy(spec: TaxonomySpec, *, slug: str | None = None) -> tuple[TaxonomyVersion, bool]:
    """Store `spec` as the taxonomy's newest version; returns (version, changed).

    Unchanged content is a no-op. A version that a project uses is frozen, so changed content then becomes a
    new version; an unused latest version is rewritten in place rather than piling up versions.
    """
    slug = slug or spec.slug
    taxonomy, _ = Taxonomy.objects.select_for_update().get_or_create(slug=slug, defaults={"name": spec.name})
    Taxonomy.objects.filter(pk=taxonomy.pk).update(
        name=spec.name, description=spec.description, citation=spec.citation, source_url=spec.source_url
    )
    digest = content_hash(spec)
    latest = taxonomy.versions.order_by("-number").first()
    if latest is not None and latest.content_hash == digest:
        return latest, False
    if latest is not None and not latest.is_in_use():
        latest.modes.all().delete()
        latest.categories.all().delete()
        version = latest
        version.label, version.labelling_mode, version.content_hash = (
            spec.version,
            spec.labelling_mode,
            digest,
        )
        version.save()
    else:
        number = latest.number + 1 if latest else 1
        version = TaxonomyVersion.objects.create(
            taxonomy=taxonomy,
            number=number,
            label=spec.version,
            labelling_mode=spec.labelling_mode,
            content_hash=digest,
        )
    _create_content(version, spec)
    return version, True


def _create_content(version: TaxonomyVersion, spec: TaxonomySpec) -> None:
    categories = {
        category.code: Category.objects.create(
            version=version, code=category.code, name=category.name, description=category.description, order=i
        )
        for i, category in enumerate(spec.categories)
    }
    modes: dict[str, FailureMode] = {}
    for order, mode in enumerate(spec.all_modes()):
        modes[mode.code] = FailureMode.objects.create(
            version=version,
            category=categories.get(mode.category_code) if mode.category_code else None,
            parent=modes.get(mode.parent_code) if mode.parent_code else None,
            code=mode.code,
            name=mode.name,
            definition=mode.definition,
            guidance=mode.guidance,
            examples=list(mode.examples),
            aliases=list(mode.aliases),
            fatal=mode.fatal,
            order=order,
        )


def load_builtin_taxonomies() -> list[tuple[TaxonomyVersion, bool]]:
    return [do_load_taxonomy(load_taxonomy_file(path)) for path in builtin_paths()]


def import_taxonomy_file(path: Path, *, slug: str | None = None) -> tuple[TaxonomyVersion, bool]:
    """Parse and validate the whole file first, so a broken file changes nothing."""
    return do_load_taxonomy(load_taxonomy_file(path), slug=slug)


def version_to_spec(version: TaxonomyVersion) -> TaxonomySpec:
    """Rebuild the file-format spec from the database (the inverse of `do_load_taxonomy`)."""
    taxonomy = version.taxonomy
    modes = list(version.modes.select_related("category", "parent").order_by("order"))

    def mode_dict(mode: FailureMode) -> dict:
        data = {
            "code": mode.code,
            "name": mode.name,
            "definition": mode.definition,
            "guidance": mode.guidance,
            "examples": list(mode.examples),
            "aliases": list(mode.aliases),
            "fatal": mode.fatal,
        }
        subtypes = [mode_dict(child) for child in modes if child.parent_id == mode.pk]
        if subtypes:
            data["subtypes"] = subtypes
        return data

    top = [mode for mode in modes if mode.parent_id is None]
    data = {
        "slug": taxonomy.slug,
        "name": taxonomy.name,
        "version": version.label,
        "labelling_mode": version.labelling_mode,
        "description": taxonomy.description,
        "citation": taxonomy.citation,
        "source_url": taxonomy.source_url,
        "categories": [
            {
                "code": category.code,
                "name": category.name,
                "description": category.description,
                "modes": [mode_dict(mode) for mode in top if mode.category_id == category.pk],
            }
            for category in version.categories.order_by("order")
        ],
        "modes": [mode_dict(mode) for mode in top if mode.category_id is None],
    }
    if not data["modes"]:
        del data["modes"]
    if not data["categories"]:
        del data["categories"]
    return parse_taxonomy(data)


def resolve_version(slug: str, number: int | None = None) -> TaxonomyVersion:
    """The named version, or the newest; raises TaxonomyVersion.DoesNotExist with the slug in the message."""
    versions = TaxonomyVersion.objects.select_related("taxonomy").filter(taxonomy__slug=slug)
    version = versions.filter(number=number).first() if number else versions.order_by("-number").first()
    if version is None:
        raise TaxonomyVersion.DoesNotExist(f"No taxonomy {slug!r}" + (f" version {number}" if number else ""))
    return version
