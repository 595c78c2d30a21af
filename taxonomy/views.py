"""Taxonomy pages: shared reference data every signed-in user may read."""

from __future__ import annotations

from django.db.models import Count, Prefetch
from django.shortcuts import get_object_or_404, render

from taxonomy.models import FailureMode, Taxonomy


def taxonomy_list(request):
    taxonomies = Taxonomy.objects.annotate(version_count=Count("versions")).order_by("slug")
    return render(request, "taxonomy/list.html", {"taxonomies": taxonomies})


def taxonomy_detail(request, slug: str):
    taxonomy = get_object_or_404(Taxonomy, slug=slug)
    versions = list(taxonomy.versions.order_by("-number"))
    number = request.GET.get("version")
    version = next((v for v in versions if str(v.number) == number), versions[0] if versions else None)
    categories, uncategorised = [], []
    if version is not None:
        modes = Prefetch(
            "modes", queryset=FailureMode.objects.filter(parent=None).prefetch_related("subtypes")
        )
        categories = list(version.categories.prefetch_related(modes).order_by("order"))
        uncategorised = list(
            version.modes.filter(category=None, parent=None).prefetch_related("subtypes").order_by("order")
        )
    return render(
        request,
        "taxonomy/detail.html",
        {
            "taxonomy": taxonomy,
            "version": version,
            "versions": versions,
            "categories": categories,
            "uncategorised": uncategorised,
        },
    )
