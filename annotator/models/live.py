"""Live traces (annotator/live): spans sent to a project's OTLP endpoint, waiting or assembled.

A request stores its accepted spans as one `SpanBatch` row (the protobuf request itself) and queues a task;
the task reads each batch into `PendingSpan` rows (one per span) and groups the rows of a trace once it is complete (root ended, quiet for OTLP_TRACE_QUIET_SECONDS) into a `Trace`, and a
`LiveTrace` row remembers which trace id became which trace, so a span that arrives later extends it (before
anyone labels it) or is kept and reported (after). `LiveSettings` holds a project's assignment choice.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotator.models.projects import Project


class SpanBatch(models.Model):
    """One export request's accepted spans, as received, until the assembly task reads them into PendingSpan
    rows (and deletes the batch). The request stores one row rather than one per span: converting and
    inserting 512 spans was most of a request's time, and the task does it off the request path."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="span_batches")
    body = models.BinaryField()  # an ExportTraceServiceRequest (protobuf) holding only the accepted spans
    spans = models.PositiveIntegerField()
    # The distinct trace ids of those spans (hex, space-separated), so that the project page can count the
    # traces waiting without reading the bodies.
    trace_ids = models.TextField(blank=True)
    received_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.spans} spans received at {self.received_at:%Y-%m-%d %H:%M:%S}"


class PendingSpan(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Waiting for its trace to complete"
        ASSEMBLED = "assembled", "Part of a stored trace"
        HELD = "held", "Arrived after labelling started: kept, not merged"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="live_spans")
    trace_id = models.CharField(max_length=32)  # hex, as OTLP/JSON writes it
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    name = models.CharField(max_length=200, blank=True)
    start_ns = models.BigIntegerField(null=True)
    end_ns = models.BigIntegerField(null=True)
    # The span as OTLP/JSON text (camelCase, hex ids), with its resource and scope, so that the trace is
    # assembled from exactly what was sent. Bytes, not jsonb: nothing queries inside it, and PostgreSQL
    # parsing each body as jsonb was most of a request's insert (annotator.live.service._insert).
    body = models.BinaryField()
    received_at = models.DateTimeField(db_index=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)

    class Meta:
        constraints = [
            # The same span sent twice (an exporter's retry, a run sent again) is stored once.
            models.UniqueConstraint(fields=["project", "trace_id", "span_id"], name="live_span_unique"),
        ]
        indexes = [
            models.Index(fields=["project", "state", "trace_id"], name="live_span_state_idx"),
        ]

    def __str__(self) -> str:
        return f"span {self.span_id} of trace {self.trace_id}"

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id


class PendingLog(models.Model):
    """A log record sent to /otlp/v1/logs (GenAI message events), kept with its trace's spans."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="live_logs")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    body = models.JSONField()  # {"resource", "scope", "log"} as OTLP/JSON
    received_at = models.DateTimeField()
    # As a span's: pending until a trace has been assembled with it; a log record arriving after its trace
    # was assembled rebuilds it like a late span (before labelling) or is held (after).
    State = PendingSpan.State
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)

    class Meta:
        indexes = [
            models.Index(fields=["project", "trace_id"], name="live_log_trace_idx"),
            models.Index(fields=["project", "state", "trace_id"], name="live_log_state_idx"),
        ]

    def __str__(self) -> str:
        return f"log of span {self.span_id} of trace {self.trace_id}"


class LiveTrace(models.Model):
    """A trace id of a project, once assembled: the stored trace it became."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="live_traces")
    otlp_trace_id = models.CharField(max_length=32)  # the spans' trace id (hex)
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    first_received_at = models.DateTimeField()
    last_received_at = models.DateTimeField()
    assembled_at = models.DateTimeField()
    spans = models.PositiveIntegerField(default=0)
    # Spans that arrived after someone started labelling the trace: kept (PendingSpan.State.HELD) and
    # counted here so the owner sees them, never merged into labelled work.
    held_spans = models.PositiveIntegerField(default=0)
    # Not chosen for labelling by the project's LiveSettings (only failures, or outside the sample): the
    # trace is in the project but `do_assign` gives it no annotators.
    unassigned = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "otlp_trace_id"], name="live_trace_unique"),
        ]
        indexes = [
            models.Index(fields=["project", "-assembled_at"], name="live_trace_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"live trace {self.otlp_trace_id}"


class LiveSettings(models.Model):
    class Assign(models.TextChoices):
        ALL = "all", "Assign every live trace"
        FAILURES = "failures", "Assign only live traces whose outcome is failure"
        SAMPLE = "sample", "Assign a sample of live traces"
        NONE = "none", "Assign no live trace"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="live_settings")
    assign = models.CharField(max_length=10, choices=Assign.choices, default=Assign.ALL)
    sample_rate = models.FloatField(default=1.0, help_text="With 'sample': the share of live traces assigned")

    class Meta:
        verbose_name_plural = "live settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(sample_rate__gte=0, sample_rate__lte=1), name="live_sample_rate_range"
            ),
        ]

    def __str__(self) -> str:
        return f"live settings of {self.project}"
