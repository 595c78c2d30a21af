"""A failure the taxonomy lacks, recorded by an annotator while labelling: the raw material of the next
taxonomy version (open coding, then a revised codebook)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.projects import Project


class ModeProposal(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACCEPTED = "accepted", "Turned into a mode"
        DECLINED = "declined", "Declined"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="proposals")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    text = models.TextField(help_text="What went wrong, in the annotator's words")
    suggested_name = models.CharField(max_length=200, blank=True)
    steps = models.JSONField(default=list, blank=True, help_text="Evidence step indices")
    # The modes the author had chosen on this trace when proposing: what the new failure co-occurs with.
    cooccurring = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    outcome = models.CharField(max_length=200, blank=True, help_text="The mode it became, or why declined")
    # Set when a taxonomy migration turned it into a mode (the outcome then names that mode's code).
    mode = models.ForeignKey(
        "taxonomy.FailureMode", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set when the proposal is a candidate a discovery run found and gated (annotator.discovery): the run,
    # and the candidate as the gate measured it (code, definition, kappa, interval, examples).
    discovery_run = models.ForeignKey(
        "annotator.DiscoveryRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    candidate = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-created_at", "id"]
        indexes = [models.Index(fields=["project", "status"], name="proposal_status_idx")]

    def __str__(self) -> str:
        return f"proposal {self.pk} on {self.trace_id}"

    @property
    def discovered(self) -> bool:
        return self.discovery_run_id is not None
