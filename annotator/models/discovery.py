"""Discovery runs and the codebook gate: model answers kept apart from the project's labels.

A discovery run induces candidate failure modes from a sample of traces and gates them on a held-out sample;
a gate run only gates candidates an owner gives. Both are LLM runs (a Job row with progress, tokens and why it
ended). What the models answered is kept in `DiscoveryAnswer` rows, never as Annotations: the gate's raters
are not raters of the project, so their answers never reach agreement reports, adjudication or exports.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.jobs import Job


class DiscoveryRun(Job):
    class Kind(models.TextChoices):
        DISCOVER = "discover", "Discovery (induce, then gate)"
        GATE = "gate", "Codebook gate"

    class Phase(models.TextChoices):
        ANALYSE = "analyse", "Analysing traces"
        EMBED = "embed", "Embedding analyses"
        NAME = "name", "Naming candidates"
        GATE = "gate", "Gating candidates"
        DONE = "done", "Done"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="discovery_runs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.ANALYSE)
    # {"kind": "batch" | "outcome" | "view", "value": ..., "ids": [trace ids, taken when the run started]}
    scope = models.JSONField(default=dict)
    induction_ids = models.JSONField(default=list, blank=True, help_text="Traces induction reads")
    held_ids = models.JSONField(
        default=list, blank=True, help_text="Traces the gate reads (unseen by induction)"
    )
    model = models.CharField(max_length=200, help_text="The model that analyses and names")
    raters = models.JSONField(default=list, help_text="The gate's rater models (K >= 3)")
    endpoint = models.JSONField(default=dict, blank=True, help_text="The endpoint settings (no key)")
    instructions = models.TextField(blank=True, help_text="The LLM rater's prompt version the gate used")
    kappa_min = models.FloatField(default=0.75)
    coverage_min = models.FloatField(default=0.70)
    # The candidates as given (gate) or as induction left them: [{code, name, definition, guidance, ...}]
    candidates = models.JSONField(default=list, blank=True)
    # What consolidation dropped, and why: [{code, name, reason, mode?}]
    dropped = models.JSONField(default=list, blank=True)
    results = models.JSONField(default=dict, blank=True, help_text="The gate's statistics per candidate")
    stop_reason = models.CharField(max_length=200, blank=True)
    total = models.PositiveIntegerField(
        default=0, help_text="Requests the current phase needs (embedding: batches of analyses)"
    )
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    tokens_used = models.PositiveBigIntegerField(default=0)
    token_cap = models.PositiveBigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Job.Meta):
        ordering = ["project", "-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} run {self.pk} of {self.project_id} ({self.status})"

    @property
    def status_label(self) -> str:
        return f"{self.status}: {self.stop_reason}" if self.stop_reason else str(self.status)

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        return min(99, int(100 * (self.done + self.failed) / self.total)) if self.total else 0

    @property
    def progress_unit(self) -> str:
        """What `done` and `total` count: embedding batches while embedding, else requests."""
        return "batches" if self.phase == self.Phase.EMBED else "requests"

    @property
    def seen_trace_ids(self) -> set[int]:
        """Every trace an analysis, a quote or a candidate of this run may be drawn from."""
        return {int(pk) for pk in [*self.induction_ids, *self.held_ids]}


class DiscoveryAnswer(models.Model):
    """One model answer of a run: a trace's analysis, a group's naming, or one rater's gate answer on a trace.

    The unique key makes phases resumable: a resumed run asks only what has no row yet."""

    class Phase(models.TextChoices):
        ANALYSE = "analyse", "Analysis of a trace"
        EMBED = "embed", "Vectors of a batch of analyses"
        NAME = "name", "Naming of a group"
        GATE = "gate", "Gate rater's answer"

    run = models.ForeignKey(DiscoveryRun, on_delete=models.CASCADE, related_name="answers")
    phase = models.CharField(max_length=10, choices=Phase.choices)
    trace = models.ForeignKey(
        "traces.Trace", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    rater = models.CharField(max_length=200, help_text="The model that answered")
    key = models.CharField(max_length=100, help_text="Trace id, the group's or the embedding batch's number")
    ok = models.BooleanField(default=False)
    answer = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "phase", "rater", "key"], name="discovery_answer_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.phase} {self.key} by {self.rater} in run {self.run_id}"
