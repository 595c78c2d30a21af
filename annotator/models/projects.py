"""Projects, who is in them with which role, and who labels which trace."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ANNOTATOR = "annotator", "Annotator"
    ADJUDICATOR = "adjudicator", "Adjudicator"
    VIEWER = "viewer", "Viewer"


class ProjectQuerySet(models.QuerySet):
    def visible_to(self, user) -> ProjectQuerySet:
        """Projects the user is an active member of (staff see none extra: access is by membership)."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user, memberships__active=True).distinct()


class QueueOrder(models.TextChoices):
    """In which order an annotator's open slots are handed out (annotator.triage.service). Who gets which
    trace is the pure assignment strategy's business and never changes with this."""

    TRACE = "trace", "Trace order"
    LLM_UNCERTAIN = "llm_uncertain", "Where the model is least certain first"
    LLM_GOLD_DISAGREEMENT = "llm_gold_disagreement", "Where the model tends to disagree with gold first"
    LLM_RARE_MODES = "llm_rare_modes", "Where the model marks modes people rarely saw first"


class Project(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    taxonomy_version = models.ForeignKey(
        "taxonomy.TaxonomyVersion", on_delete=models.PROTECT, related_name="projects"
    )
    # The whole batches the project follows: attaching one adds all its traces to the project, and a trace
    # imported into it later joins too (ProjectTrace's triggers). What the project holds is ProjectTrace.
    batches = models.ManyToManyField("traces.Batch", related_name="projects", blank=True)
    overlap = models.PositiveSmallIntegerField(default=2, help_text="Independent annotations per trace")
    guidelines = models.TextField(blank=True, help_text="Markdown, shown to annotators (sanitised)")
    blind = models.BooleanField(default=True, help_text="Annotators never see others' labels")
    # Off: imported raters (labels made elsewhere) are reference raters, like LLMs: every trace still gets
    # `overlap` people labelling here. On (reproducing a published study): their annotations fill slots.
    imported_labels_count_toward_overlap = models.BooleanField(
        default=False,
        help_text="Imported raters' annotations fill a trace's overlap slots and its adjudication",
    )
    reservation_minutes = models.PositiveIntegerField(default=30)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Archived: off the home list, no new work (claims, imports, batches, LLM runs), still readable.
    archived_at = models.DateTimeField(null=True, blank=True)
    # Gold calibration (annotator.services.calibration): the share of an annotator's claims that are
    # calibration items, how many they do before real work, and the pooled kappa against gold they must reach.
    calibration_rate = models.FloatField(default=0.0)
    qualification_size = models.PositiveIntegerField(default=0)
    qualification_min_kappa = models.FloatField(null=True, blank=True)
    queue_order = models.CharField(max_length=24, choices=QueueOrder.choices, default=QueueOrder.TRACE)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="project_overlap_positive"),
            models.CheckConstraint(
                condition=Q(calibration_rate__gte=0, calibration_rate__lte=0.5),
                name="project_calibration_rate_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class ProjectTrace(models.Model):
    """A trace the project holds: what `Trace.objects.in_project` reads, the one definition of a project's
    traces (assignment, claims, reports, exports, LLM runs, signatures, the label store, access).

    Membership is per trace, not per batch (issue 28): importing files into a project adds exactly those
    files' traces, new or already imported, and not the rest of a batch that happened to hold one of them.
    A row carries no origin. The project's whole batches (`Project.batches`) are kept in step by database
    triggers (migration annotator 0032), whatever writes them (the verbs, COPY, bulk_create, fixtures):
    attaching a batch adds all its traces, a trace inserted into a followed batch joins every project that
    follows it, and detaching a batch removes that batch's traces from the project, including any also
    imported into it file by file (no origin is kept, so none can be told apart); a trace moved to another
    batch leaves the followers of the old one and joins those of the new one.

    Keyed by (project, trace), like Step: that key's index serves `in_project` from the project's side and
    the trace's from its own for the joins and CASCADE deletes; no id column, sequence or extra index for
    an import to maintain."""

    pk = models.CompositePrimaryKey("project", "trace")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="trace_rows", db_index=False)
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="project_rows")

    def __str__(self) -> str:
        return f"{self.trace_id} in {self.project_id}"


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=12, choices=Role.choices)
    # Removing someone keeps their finished work: the membership is deactivated, not deleted.
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "role", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user", "role"], name="membership_unique_role"),
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.project}"


class AssignmentQuerySet(models.QuerySet):
    def work(self) -> AssignmentQuerySet:
        """Real labelling slots: everything except gold calibration items (which no report counts)."""
        return self.filter(purpose=Assignment.Purpose.WORK)

    def open_for(self, user) -> AssignmentQuerySet:
        """The user's slots still to do (to do or draft): what "Start next" claims and a removal frees."""
        return self.filter(annotator=user, status__in=Assignment.OPEN_STATUSES)


class Assignment(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "To do"
        IN_PROGRESS = "in_progress", "Draft"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"

    class Purpose(models.TextChoices):
        WORK = "work", "Work"
        # A gold trace served to test the annotator against its gold labels: never in any agreement
        # report, adjudication queue, signature, export or round, never moved by do_assign.
        CALIBRATION = "calibration", "Calibration (gold)"

    OPEN_STATUSES = (Status.PENDING, Status.IN_PROGRESS)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # An expiring reservation: "Start next" claims a slot, and an abandoned claim frees itself.
    reserved_until = models.DateTimeField(null=True, blank=True)
    skip_reason = models.TextField(blank=True)
    # A slot of a calibration round: it never moves to another annotator (the round needs every one).
    calibration_round = models.ForeignKey(
        "annotator.CalibrationRound", null=True, blank=True, on_delete=models.SET_NULL, related_name="slots"
    )
    purpose = models.CharField(max_length=12, choices=Purpose.choices, default=Purpose.WORK)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["project", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace", "annotator"], name="assignment_unique_trace_annotator"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "annotator", "status"], name="assignment_queue_idx"),
            models.Index(fields=["project", "trace"], name="assignment_trace_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.trace_id} ({self.status})"


class TriageRank(models.Model):
    """A trace's place in the project's human queue under an LLM triage order (`Project.queue_order`): the
    claim hands out an annotator's open slots by rank, unranked traces after the ranked ones, in trace
    order. Rewritten as a whole by annotator.triage.service; empty under trace order. Only the rank is
    stored, never the score or the model's labels behind it."""

    UNRANKED = 2**31 - 1  # the place of a trace without a rank: after every ranked one

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="triage_ranks")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["project", "rank"]
        constraints = [
            # Also the index the claim's join reads (project, trace).
            models.UniqueConstraint(fields=["project", "trace"], name="triage_rank_unique_trace"),
        ]

    def __str__(self) -> str:
        return f"trace {self.trace_id} at {self.rank} in {self.project_id}"


class CalibrationItem(models.Model):
    """A gold trace an owner chose to serve as a calibration item (its gold labels are the answer)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="calibration_items")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "trace_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "trace"], name="calibration_item_unique_trace"),
        ]

    def __str__(self) -> str:
        return f"calibration item {self.trace_id} of {self.project}"
