"""Taxonomies are versioned: a version a project labels with never changes, so labels keep their meaning."""

from __future__ import annotations

from django.db import models


class LabellingMode(models.TextChoices):
    MULTI_LABEL = "multi_label", "Multi-label (any number of modes)"
    SINGLE_PRIMARY = "single_primary", "One primary label, optional secondary labels"


class Taxonomy(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    citation = models.TextField(blank=True)
    source_url = models.URLField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "taxonomies"

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> TaxonomyVersion | None:
        return self.versions.order_by("-number").first()


class TaxonomyVersion(models.Model):
    taxonomy = models.ForeignKey(Taxonomy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    label = models.CharField(max_length=40, blank=True, help_text="The version string of the source file")
    labelling_mode = models.CharField(max_length=20, choices=LabellingMode.choices)
    # A fingerprint of the canonical content: loading the same file twice must not create a new version.
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["taxonomy__slug", "number"]
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "number"], name="taxonomy_version_number_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.taxonomy.slug} v{self.number}"

    @property
    def is_multi_label(self) -> bool:
        return self.labelling_mode == LabellingMode.MULTI_LABEL

    def is_in_use(self) -> bool:
        """A version some project labels with is frozen; editing it must create a new version."""
        return self.projects.exists()


class Category(models.Model):
    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="categories")
    code = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["version", "order"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="category_code_unique_in_version"),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class FailureMode(models.Model):
    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="modes")
    category = models.ForeignKey(
        Category, on_delete=models.CASCADE, related_name="modes", null=True, blank=True
    )
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, related_name="subtypes", null=True, blank=True
    )
    code = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    definition = models.TextField()
    guidance = models.TextField(blank=True)
    examples = models.JSONField(default=list, blank=True)
    aliases = models.JSONField(default=list, blank=True)
    fatal = models.BooleanField(
        default=False, help_text="Usually predicts a failed run (orders adjudication)"
    )
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["version", "order"]
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="mode_code_unique_in_version"),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"

    @property
    def coarse(self) -> FailureMode:
        """The top-level mode this subtype rolls up to (the coarse/fine mapping)."""
        return self.parent if self.parent_id else self
