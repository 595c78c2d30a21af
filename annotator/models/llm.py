"""The LLM rater: a project's endpoint settings, its versioned prompt, and runs with one result row per trace.

A language model is measured like a human: its labels are ordinary submitted Annotations by a rater user (kind llm,
named ``llm:<model>``, see annotator.raters). These rows only describe how the labels were produced and what it cost.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from annotator.models.jobs import Job

# Requests one run keeps in flight at once: the endpoint's own limit decides (a local vLLM takes dozens, a
# hosted API's tier fewer); 64 keeps one worker's threads and connections modest.
MAX_CONCURRENCY = 64


class LLMConfig(models.Model):
    """One per project: an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, ...).

    The API key is never stored in clear: either the name of an environment variable (`api_key_env`, used
    only when the administrator lists it in LLM_KEY_ENVS) or a Fernet token (`api_key_encrypted`), see
    annotator.llm.secrets. Nothing here is ever rendered as the key.
    """

    project = models.OneToOneField("annotator.Project", on_delete=models.CASCADE, related_name="llm_config")
    # A CharField, not URLField: its validator refuses dot-less hosts such as a compose service "http://vllm:8000".
    base_url = models.CharField(
        max_length=500, default="http://127.0.0.1:11434/v1", help_text="Up to /v1; /chat/completions is added"
    )
    model = models.CharField(max_length=200, blank=True)
    # "Similar traces" (annotator.similar) and discovery's grouping (annotator.discovery): with a model named
    # here, texts are represented by the endpoint's /embeddings; empty, by a TF-IDF fitted on the project's text.
    embeddings_model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="For similar traces and discovery's grouping: an embeddings model on this endpoint "
        "(/embeddings); empty: TF-IDF",
    )
    api_key_env = models.CharField(max_length=100, blank=True, default="")
    api_key_encrypted = models.TextField(blank=True)
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=1024, help_text="Per answer")
    requests_per_minute = models.PositiveIntegerField(default=60)
    concurrency = models.PositiveSmallIntegerField(
        default=8, help_text=f"Requests a run keeps in flight at once (1 to {MAX_CONCURRENCY})"
    )
    token_cap = models.PositiveBigIntegerField(
        default=2_000_000, help_text="A run stops cleanly once it has used this many tokens (0: no cap)"
    )
    timeout_seconds = models.FloatField(default=120.0)
    # Only for the estimate shown before a run (annotator.services.llm.estimate); empty: no cost shown.
    prompt_price_per_million = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Price per million prompt tokens, for the estimate before a run (empty: not shown)",
    )
    completion_price_per_million = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Price per million completion tokens",
    )
    max_trace_chars = models.PositiveIntegerField(
        default=60_000, help_text="Character budget for the trace in one request"
    )
    # The same words as annotator.llm.windows (WINDOWS, CUT), which stays free of Django.
    long_traces = models.CharField(
        max_length=10,
        choices=[
            ("windows", "Judge in overlapping windows (every step seen)"),
            ("cut", "Cut the middle out (marked; the model never sees it)"),
        ],
        default="windows",
        help_text="A trace over the budget: several requests of consecutive steps, or one with its middle cut",
    )
    window_overlap_steps = models.PositiveSmallIntegerField(
        default=2, help_text="Steps that consecutive windows share (0 to 20)"
    )
    json_mode = models.BooleanField(default=True, help_text='Send response_format={"type": "json_object"}')
    show_to_annotators = models.BooleanField(
        default=False, help_text="After submitting their own annotation, annotators see the LLM's labels"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "LLM rater settings"
        verbose_name_plural = "LLM rater settings"
        constraints = [
            models.CheckConstraint(condition=Q(requests_per_minute__gte=1), name="llm_config_rpm_positive"),
            models.CheckConstraint(condition=Q(timeout_seconds__gt=0), name="llm_config_timeout_positive"),
            models.CheckConstraint(
                condition=Q(concurrency__gte=1, concurrency__lte=MAX_CONCURRENCY),
                name="llm_config_concurrency_range",
            ),
        ]

    def __str__(self) -> str:
        return f"LLM rater settings of {self.project_id}"

    @property
    def has_stored_key(self) -> bool:
        return bool(self.api_key_encrypted)

    def key_source(self) -> str:
        """Where the key comes from, for display: never the key itself."""
        if self.api_key_encrypted:
            return "a key is stored (encrypted)"
        if self.api_key_env:
            from annotator.llm.secrets import env_key_source

            return env_key_source(self.api_key_env, self.base_url)
        return "no key (fine for local servers such as Ollama or vLLM)"

    def api_key(self, base_url: str | None = None) -> str:
        """The key to send to `base_url` (default: the configured one): the stored key if any, else the value
        of an environment variable the administrator allows (LLM_KEY_ENVS) for that URL, else "".

        A stored key belongs to the base URL it was entered for (changing the URL forgets it), so a run that
        was started with another URL gets none."""
        from annotator.llm.secrets import decrypt, env_key

        url = self.base_url if base_url is None else base_url
        if self.api_key_encrypted:
            return decrypt(self.api_key_encrypted) if url == self.base_url else ""
        return env_key(self.api_key_env, url) if self.api_key_env else ""


class PromptTemplate(models.Model):
    """The instruction part of the prompt, versioned per project: editing creates a new row, and every run
    records the version it used, so labels stay explained by the exact words that produced them."""

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, related_name="prompt_templates"
    )
    number = models.PositiveIntegerField()
    instructions = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="prompt_template_number_unique"),
        ]

    def __str__(self) -> str:
        return f"prompt v{self.number} of {self.project_id}"


class LLMRun(Job):
    """One batch labelled by one model: a job row with progress, tokens and why it ended."""

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="llm_runs")
    # A run covers a batch, or (batch empty) the traces of a saved view, taken when the run started.
    batch = models.ForeignKey(
        "traces.Batch", on_delete=models.CASCADE, null=True, blank=True, related_name="llm_runs"
    )
    view_name = models.CharField(max_length=100, blank=True, help_text="The saved view a run covers")
    # {"params": [[name, value], ...], "ids": [trace ids]}: the view's filters and the traces they selected
    # when the run started (labels the run adds may change what an LLM-mode filter selects; the run's
    # traces must not move under it, e.g. on resume).
    scope = models.JSONField(default=dict, blank=True)
    # RESTRICT: a version a run used cannot be deleted alone, but goes with its project.
    prompt = models.ForeignKey(PromptTemplate, on_delete=models.RESTRICT, related_name="runs")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="llm_runs")
    model = models.CharField(max_length=200)
    # The endpoint settings the run was started with (no key): what produced these labels.
    endpoint = models.JSONField(default=dict, blank=True)
    limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="First N traces of the batch or view"
    )
    stop_reason = models.CharField(max_length=200, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    tokens_used = models.PositiveBigIntegerField(default=0)
    token_cap = models.PositiveBigIntegerField(default=0)
    windowed_traces = models.PositiveIntegerField(default=0, help_text="Traces judged in several windows")
    window_requests = models.PositiveIntegerField(default=0, help_text="The windows of those traces")
    # Requests sent and not yet answered, as the worker last wrote it (0 when a worker claims the run: a
    # killed worker's requests are lost, and their traces are simply still pending).
    in_flight = models.PositiveSmallIntegerField(default=0)
    # The pace of this stretch of work: when the current claim began and how many traces were processed
    # before it, so the estimate of the time left ignores the pause before a resume.
    pace_since = models.DateTimeField(null=True, blank=True)
    pace_base = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Job.Meta):
        ordering = ["project", "-created_at"]

    def __str__(self) -> str:
        return f"LLM run {self.pk} of {self.model} on {self.covers} ({self.status_label})"

    @property
    def covers(self) -> str:
        """What the run labels, in words: "batch NAME" or "view NAME"."""
        return f"view {self.view_name}" if self.scope else f"batch {self.batch.name if self.batch else '?'}"

    @property
    def status_label(self) -> str:
        """The status with its reason ("stopped: token cap reached"), so the reason is never lost."""
        return f"{self.status}: {self.stop_reason}" if self.stop_reason else str(self.status)

    @property
    def processed(self) -> int:
        return self.done + self.failed + self.skipped

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        return min(99, int(100 * self.processed / self.total)) if self.total else 0

    @property
    def seconds_left(self) -> float | None:
        """The time left at the pace of the current claim (computed, never stored); None for a run that is
        not running or has no pace yet."""
        from django.utils import timezone

        from annotator.llm.pace import seconds_left

        if self.status != self.Status.RUNNING or self.pace_since is None:
            return None
        elapsed = (timezone.now() - self.pace_since).total_seconds()
        return seconds_left(self.processed - self.pace_base, elapsed, self.total - self.processed)

    @property
    def time_left(self) -> str:
        from annotator.llm.pace import describe

        return describe(self.seconds_left) if self.status == self.Status.RUNNING else ""


class LLMTraceResult(models.Model):
    """What happened to one trace in one run. The unique (run, trace) pair is what makes a run resumable:
    a re-run or a redelivered task skips traces that already have a row."""

    class Status(models.TextChoices):
        DONE = "done", "Labelled"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped (already labelled by this model)"

    run = models.ForeignKey(LLMRun, on_delete=models.CASCADE, related_name="results")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="llm_results")
    status = models.CharField(max_length=10, choices=Status.choices)
    annotation = models.ForeignKey(
        "annotator.Annotation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Model answers requested")
    windows = models.PositiveIntegerField(
        default=1,
        help_text="Requests the trace was split into (retries not counted; 1: it fit in one; 0: skipped)",
    )
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    # Kept for debugging a failure (the model's last answer), never turned into labels when malformed.
    raw_output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # The model's own certainty (0..1) of the whole answer, when it gave one (annotator.llm.parse); read by
    # the triage order, never shown to a blind annotator.
    confidence = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "trace"], name="llm_result_unique_trace_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.status} for trace {self.trace_id} in run {self.run_id}"
