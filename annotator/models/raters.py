"""What kind of rater a user is: a column, not a naming convention (see annotator.raters for the rules)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class RaterKind(models.TextChoices):
    HUMAN = "human", "Human (labels made here)"
    LLM = "llm", "Language model"
    IMPORTED = "imported", "Imported (labels made elsewhere)"


class Rater(models.Model):
    """The kind of a user who rates traces. A user without a row is a human who signs in and labels here.

    Imported raters are namespaced by their source (the dataset or file their labels came from), so
    ``annotator-1`` of two published datasets stays two raters, and a name in a file never resolves to a
    real account (only a staff member's explicit mapping does that).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="rater"
    )
    kind = models.CharField(max_length=10, choices=RaterKind.choices, default=RaterKind.HUMAN)
    source = models.CharField(
        max_length=200, blank=True, help_text="Imported raters: the dataset or file the labels came from"
    )
    name = models.CharField(max_length=150, blank=True, help_text="Imported raters: the name in the source")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "name"],
                condition=Q(kind="imported"),
                name="rater_imported_unique_in_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.kind})"
