"""Trace representations for "similar traces" (annotator.similar): how a project's traces were turned into
vectors (a build, with its progress), and one vector per trace."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.jobs import Job


class TraceRepresentation(Job):
    """One build of a project's trace vectors. `version` numbers the builds of a project; the newest that
    succeeded is the one searched, and its vectors are kept current as traces arrive (same fitted model or
    embeddings model, same version). A rebuild makes a new version and drops the older vectors once done."""

    class Method(models.TextChoices):
        TFIDF = "tfidf", "TF-IDF + SVD"
        EMBEDDINGS = "embeddings", "Embeddings"

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="trace_representations"
    )
    version = models.PositiveIntegerField()
    method = models.CharField(max_length=12, choices=Method.choices)
    model = models.CharField(max_length=200, blank=True, help_text="The embeddings model, if any")
    dimensions = models.PositiveIntegerField(default=0)
    # The fitted TF-IDF (vocabulary, idf, SVD components) as a numpy .npz: new traces are projected with it.
    fitted = models.BinaryField(blank=True, default=b"")
    traces_total = models.PositiveIntegerField(default=0)
    traces_done = models.PositiveIntegerField(default=0)
    # Bumped whenever vectors of this version are written, so a process's cached matrix knows it is stale.
    generation = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Job.Meta):
        ordering = ["project", "-version"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="tracerep_liveness_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "version"], name="trace_representation_version_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"representation v{self.version} of project {self.project_id} ({self.method}, {self.status})"

    @property
    def label(self) -> str:
        if self.method == self.Method.EMBEDDINGS:
            return f"embeddings ({self.model}, {self.dimensions} dimensions)"
        return f"TF-IDF + SVD ({self.dimensions} dimensions)"


class TraceVector(models.Model):
    """A trace's vector in one representation of one project: unit-length little-endian float32 bytes."""

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    vector = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "version", "trace"], name="trace_vector_project_version_trace_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"vector of trace {self.trace_id} (project {self.project_id}, v{self.version})"
