"""The normalised trace model: every importer produces Batches of Traces made of Steps.

Steps are rows (not one JSON blob per trace) so the viewer can page through a 10,000-step trace with an
index range scan and search inside it without loading the whole trace.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import models


class Outcome(models.TextChoices):
    SUCCESS = "success", "Success"
    FAILURE = "failure", "Failure"
    UNKNOWN = "unknown", "Unknown"


class StepKind(models.TextChoices):
    MESSAGE = "message", "Message"
    REASONING = "reasoning", "Reasoning"
    TOOL_CALL = "tool_call", "Tool call"
    TOOL_RESULT = "tool_result", "Tool result"
    OBSERVATION = "observation", "Observation"
    ERROR = "error", "Error"


class BatchQuerySet(models.QuerySet):
    def in_project(self, project) -> BatchQuerySet:
        """The batches the project follows whole (`project.batches`, even while empty) and those holding any of
        its traces (Trace.objects.in_project; a project may hold part of a batch, files imported into it):
        the batch names a project's filters and scopes accept."""
        batch = models.OuterRef("pk")
        follows = Batch.projects.through.objects.filter(project_id=project.pk, batch_id=batch)
        holds = Trace.objects.in_project(project).filter(batch=batch)
        return self.filter(models.Exists(follows) | models.Exists(holds))


class Batch(models.Model):
    # Not unique: a batch belongs to the projects that hold it, so two projects may each have a batch "run-1"
    # and an import never appends to a batch its user cannot see (annotator.batches decides who sees what).
    name = models.CharField(max_length=200)
    source = models.TextField(blank=True, help_text="Where the traces came from (file names, repo id)")
    # Comma-separated formats of the batch's files: a batch may mix every format we read.
    format = models.TextField(blank=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    trace_count = models.PositiveIntegerField(default=0)
    step_count = models.PositiveBigIntegerField(default=0)

    objects = BatchQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return self.name


class TraceQuerySet(models.QuerySet):
    # A count of the same rows by a narrower query (annotator.search.service counts a filtered list on the
    # project's membership rows alone). The methods below shape rows without changing which rows, so they
    # keep it; every other method clones without it and counts the plain way.
    _counter: Callable[[], int] | None = None

    def counted_by(self, counter: Callable[[], int]) -> TraceQuerySet:
        clone = self._chain()
        clone._counter = counter
        return clone

    def count(self) -> int:
        if self._counter is not None and self._result_cache is None:
            return self._counter()
        return super().count()

    def excluding(self, pk: int) -> TraceQuerySet:
        """The list without one trace, counted the way this one is (less one when the trace was in it)."""
        rest = self.exclude(pk=pk)
        if self._counter is not None:
            counter, present = self._counter, self.filter(pk=pk)
            rest._counter = lambda: counter() - int(present.exists())
        return rest

    def _keeping_counter(self, clone: TraceQuerySet) -> TraceQuerySet:
        clone._counter = self._counter
        return clone

    def only(self, *fields: str) -> TraceQuerySet:
        return self._keeping_counter(super().only(*fields))

    def defer(self, *fields: str) -> TraceQuerySet:
        return self._keeping_counter(super().defer(*fields))

    def select_related(self, *fields: str) -> TraceQuerySet:
        return self._keeping_counter(super().select_related(*fields))

    def order_by(self, *fields) -> TraceQuerySet:
        return self._keeping_counter(super().order_by(*fields))

    def in_project(self, project) -> TraceQuerySet:
        """The project's traces: those put into it (annotator.models.ProjectTrace rows: the files imported
        into it, and every trace of the whole batches it follows). The one definition every reader
        (agreement, adjudication, signatures, exports, LLM runs, progress, access) and the label store use."""
        return self.filter(in_project_q(project))


def in_project_q(project, trace_path: str = "") -> models.Q:
    """Rows whose trace (reached by `trace_path`, e.g. ``"assignment__trace"``) is one of the project's: a
    join on the membership table's (project, trace) key."""
    prefix = f"{trace_path}__" if trace_path else ""
    return models.Q(**{f"{prefix}project_rows__project": project})


class Trace(models.Model):
    # No index of its own: trace_batch_external_idx (batch, external_id) serves every lookup by batch.
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="traces", db_index=False)
    external_id = models.CharField(max_length=255)
    # Identity of the content whatever its container (see traces.services.content_hash). Not unique: two
    # projects that cannot see each other's batches import the same file as their own traces.
    # Indexed in Meta (a plain btree): db_index on a CharField adds a LIKE-pattern index on PostgreSQL too,
    # which no query uses and every import would maintain.
    content_hash = models.CharField(max_length=64)
    task = models.TextField(blank=True)
    system = models.CharField(max_length=120, blank=True)
    model = models.CharField(max_length=120, blank=True)
    benchmark = models.CharField(max_length=120, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.UNKNOWN)
    score = models.FloatField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Verdicts that came with the data (Who&When's attribution, MAST's failure modes): only people who may
    # see the trace's labels see them (annotator.access), so they are never mixed into `metadata`.
    answer_key = models.JSONField(default=dict, blank=True)
    raw = models.JSONField(null=True, blank=True, help_text="The original record, for lossless export")
    source_format = models.CharField(max_length=40, blank=True)
    step_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TraceQuerySet.as_manager()

    class Meta:
        ordering = ["batch", "id"]
        indexes = [
            models.Index(fields=["batch", "external_id"], name="trace_batch_external_idx"),
            models.Index(fields=["model"], name="trace_model_idx"),
            models.Index(fields=["content_hash"], name="trace_content_hash_idx"),
        ]
        # PostgreSQL also has the trace list's score order, either way (migration traces 0015).

    def __str__(self) -> str:
        return f"{self.batch.name}/{self.external_id}"


class Step(models.Model):
    # Keyed by its place, (trace, index): that key's index serves every lookup by trace, and an import
    # maintains one index and no id sequence (the id's index and sequence were about 30% of a step COPY,
    # issue 14). Nothing points at a step row: labels name steps by index.
    pk = models.CompositePrimaryKey("trace", "index")
    # No foreign-key constraint either: a row-by-row check of every step cost an import as much as the COPY
    # of its steps (issue 14). Migration traces 0010 keeps the same guarantee with set-based triggers: an
    # insert or update naming a missing trace fails, and deleting a trace deletes its steps.
    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="steps", db_index=False, db_constraint=False
    )
    index = models.PositiveIntegerField()
    # Parent by index rather than by FK: bulk COPY needs no ids, and nesting is per trace anyway.
    parent_index = models.PositiveIntegerField(null=True, blank=True)
    depth = models.PositiveSmallIntegerField(default=0)
    agent = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=40, blank=True)
    kind = models.CharField(max_length=20, choices=StepKind.choices, default=StepKind.MESSAGE)
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=200, blank=True)
    tool_args = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    timestamp = models.CharField(max_length=64, blank=True, help_text="ISO 8601 as given by the source")
    tokens = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    # A step's data columns in their canonical order: the COPY import, the API and the dataset export all
    # read this one list.
    DATA_FIELDS = (
        "index",
        "parent_index",
        "depth",
        "agent",
        "role",
        "kind",
        "content",
        "tool_name",
        "tool_args",
        "tool_call_id",
        "timestamp",
        "tokens",
        "duration_ms",
    )

    class Meta:
        ordering = ["trace", "index"]

    def __str__(self) -> str:
        return f"step {self.index} of trace {self.trace_id}"
