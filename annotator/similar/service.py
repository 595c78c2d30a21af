"""The verbs of "similar traces": build a project's representation (a job with progress), keep it current as
traces arrive, and load it as a `NeighbourIndex` cached per process.

A build (`TraceRepresentation`, a Job) fits the TF-IDF on a sample of the project's traces, or uses the
endpoint's embeddings model when the owner names one (LLMConfig.embeddings_model), then writes a vector per
trace, a chunk per transaction, counting `traces_done`. It is idempotent: a build resumed after its worker
died fits nothing twice (the fitted model is stored first) and writes only the traces still missing a vector.
After an import the task `annotator.similar.update` writes the new traces' vectors in the current version
(the same fitted model, the same embeddings model), or starts the project's first build.

Spending is bounded: with an embeddings model, a representation holds at most MAX_EMBEDDED_TRACES traces,
each sent as at most EMBED_CHARS characters (about 2,000 tokens), so a build, and the updates after it, spend
at most about MAX_EMBEDDED_TRACES x 2,000 tokens in all. A project over the cap is refused before anything
is sent (an update stops before the chunk that would cross it): TF-IDF, which costs nothing, has no cap. The
requests share the project's rate limit and pauses with its LLM runs.

An owner stops a build in progress (`do_stop_build`): its worker checks before every embedding batch and
every chunk of traces, sends and writes nothing more, and the build stays stopped with its reason.

Each process keeps the matrix of the few representations it searched last (`index_for`), keyed by
(project, version) and checked against the row's `generation`, which every write of vectors bumps.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Max
from django.db.models.functions import Substr
from django.utils import timezone

from annotator.llm.client import ChatClient, Endpoint, LLMError, RateLimiter
from annotator.models import LLMConfig, Project, TraceRepresentation, TraceVector
from annotator.models.jobs import JobStatus
from annotator.services.enqueue import enqueue
from annotator.services.jobs import heartbeat, send_job, stale_before
from annotator.services.llm.config import get_config
from annotator.services.llm.labeller import limiter_key
from annotator.similar.freshness import UPDATE_TASK
from annotator.similar.vectors import (
    MAX_DIMENSIONS,
    STEP_CHARS,
    NeighbourIndex,
    TfidfModel,
    fit_tfidf,
    normalised,
    pack,
    trace_text,
)
from traces.models import Step, Trace

log = logging.getLogger(__name__)

BUILD_TASK = "annotator.similar.build"
CHUNK_TRACES = 500  # traces per transaction of vectors
FIT_SAMPLE = 5_000  # traces the TF-IDF is fitted on (all of them below that)
EMBED_BATCH = 32  # texts per /embeddings request
EMBED_CHARS = 8_000  # of a trace's text sent to the embeddings model (about 2,000 tokens)
MAX_EMBEDDED_TRACES = 100_000  # traces an embeddings representation holds (the spending bound: see above)
STOPPED_BY_OWNER = "stopped by the owner"
CACHED_INDEXES = 4  # representations a process keeps in memory

Method = TraceRepresentation.Method


class SimilarError(ValueError):
    """Shown as it is: why a representation cannot be built or read."""


# Reading ---------------------------------------------------------------------------------------------------


def current_representation(project: Project) -> TraceRepresentation | None:
    """The newest build that succeeded: the one searched."""
    return (
        TraceRepresentation.objects.filter(project=project, status=JobStatus.SUCCEEDED)
        .order_by("-version")
        .first()
    )


def active_build(project: Project) -> TraceRepresentation | None:
    return (
        TraceRepresentation.objects.filter(project=project, status__in=TraceRepresentation.ACTIVE_STATUSES)
        .order_by("-version")
        .first()
    )


def latest_build(project: Project) -> TraceRepresentation | None:
    return TraceRepresentation.objects.filter(project=project).order_by("-version").first()


_indexes: OrderedDict[tuple[int, int], tuple[int, NeighbourIndex]] = OrderedDict()
_indexes_lock = threading.Lock()


def index_for(representation: TraceRepresentation) -> NeighbourIndex:
    """The representation's vectors as one matrix, loaded once per process and generation."""
    key = (representation.project_id, representation.version)
    with _indexes_lock:
        cached = _indexes.get(key)
        if cached is not None and cached[0] == representation.generation:
            _indexes.move_to_end(key)
            return cached[1]
    index = _load_index(representation)
    with _indexes_lock:
        _indexes[key] = (representation.generation, index)
        _indexes.move_to_end(key)
        while len(_indexes) > CACHED_INDEXES:
            _indexes.popitem(last=False)
    return index


def forget_cached_indexes() -> None:
    with _indexes_lock:
        _indexes.clear()


def _load_index(representation: TraceRepresentation) -> NeighbourIndex:
    """One query, in trace order; the vectors' bytes joined and read as one array (no per-row numpy)."""
    ids: list[int] = []
    blobs: list[bytes] = []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT trace_id, vector FROM {TraceVector._meta.db_table} "
            "WHERE project_id = %s AND version = %s ORDER BY trace_id",
            [representation.project_id, representation.version],
        )
        while rows := cursor.fetchmany(10_000):
            for trace_id, vector in rows:
                ids.append(trace_id)
                blobs.append(bytes(vector))
    dimensions = representation.dimensions
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").astype(np.float32)
    if matrix.size != len(ids) * dimensions:
        raise SimilarError(f"representation v{representation.version} holds vectors of another length")
    return NeighbourIndex(ids=np.asarray(ids, dtype=np.int64), matrix=matrix.reshape(len(ids), dimensions))


# Building --------------------------------------------------------------------------------------------------


def do_request_build(project: Project, *, actor=None) -> TraceRepresentation:
    """Start a build of the project's representation (the embeddings model if the owner named one, else
    TF-IDF), or hand back the one already queued or running."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
        running = active_build(project)
        if running is not None:
            return running
        config = LLMConfig.objects.filter(project=project).first()
        model = (config.embeddings_model if config else "").strip()
        number = (
            TraceRepresentation.objects.filter(project=project).aggregate(n=Max("version"))["n"] or 0
        ) + 1
        build = TraceRepresentation.objects.create(
            project=project,
            version=number,
            method=Method.EMBEDDINGS if model else Method.TFIDF,
            model=model,
            traces_total=Trace.objects.in_project(project).count(),
            created_by=actor,
        )
        send_job(TraceRepresentation, build.pk)
    log.info("project %s: similar-traces build v%d (%s) requested", project.slug, number, build.method)
    return build


def do_build(build_id: int) -> TraceRepresentation:
    """Run a build to its end (the task of `annotator.similar.build`); idempotent. A build stopped by its
    owner meanwhile sends and writes nothing more and stays stopped."""
    if not TraceRepresentation.claim(build_id, stale_before=stale_before()):
        return TraceRepresentation.objects.get(pk=build_id)
    build = TraceRepresentation.objects.select_related("project").get(pk=build_id)
    try:
        with heartbeat(TraceRepresentation, build_id), _vectoriser(build) as vectorise:
            _write_missing(build, vectorise)
    except (SimilarError, LLMError) as error:
        TraceRepresentation.fail(build_id, f"Could not build the representation: {error}")
        return TraceRepresentation.objects.get(pk=build_id)
    except Exception:
        log.exception("similar-traces build %s failed", build_id)
        TraceRepresentation.fail(build_id, "Could not build the representation: an internal error (logged)")
        raise
    with transaction.atomic():
        finished = TraceRepresentation.objects.filter(pk=build_id, status=JobStatus.RUNNING).update(
            status=JobStatus.SUCCEEDED,
            finished_at=timezone.now(),
            generation=F("generation") + 1,
            traces_total=F("traces_done"),  # traces that joined the project during the build included
        )
        if finished:
            # The older versions are no longer searched: their vectors go (never for a stopped build: the
            # version searched is still the last one that succeeded).
            TraceVector.objects.filter(project_id=build.project_id, version__lt=build.version).delete()
    build.refresh_from_db()
    if not finished:
        log.info("project %s: similar-traces v%d ended %s", build.project.slug, build.version, build.status)
        return build
    log.info(
        "project %s: similar-traces v%d built (%d traces)",
        build.project.slug,
        build.version,
        build.traces_done,
    )
    return build


def do_stop_build(project: Project, *, reason: str = STOPPED_BY_OWNER) -> TraceRepresentation | None:
    """Stop the project's build that is queued or running: its worker sends no further embedding batch and
    writes no further chunk of vectors, and the build stays stopped (`error` says why; the version searched
    is still the last one that succeeded). An import afterwards does not start another first build: the
    owner starts the next one. None when no build is in progress."""
    build = active_build(project)
    if build is None:
        return None
    stopped = TraceRepresentation.objects.filter(pk=build.pk, status__in=TraceRepresentation.ACTIVE_STATUSES)
    if not stopped.update(status=JobStatus.STOPPED, error=reason[:200], finished_at=timezone.now()):
        return None
    build.refresh_from_db()
    log.info("project %s: similar-traces v%d stopped (%s)", project.slug, build.version, reason)
    return build


def do_update(project_id: int) -> int:
    """Write the vectors of the project's traces that have none in the current representation (after an
    import); start the first build of a project that has none. Returns how many vectors were written."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return 0
    if active_build(project) is not None:
        return 0  # the running build writes every trace missing a vector, new ones included
    build = current_representation(project)
    if build is None:
        newest = latest_build(project)
        if newest is not None and newest.status == JobStatus.STOPPED:
            return 0  # the owner stopped the first build: starting another is theirs to do
        if Trace.objects.in_project(project).exists():
            do_request_build(project)
        return 0
    try:
        with _vectoriser(build) as vectorise:
            written = _write_missing(build, vectorise)
    except (SimilarError, LLMError) as error:
        log.warning("project %s: similar-traces update failed: %s", project.slug, error)
        return 0
    if written:
        TraceRepresentation.objects.filter(pk=build.pk).update(
            traces_total=F("traces_total") + written, generation=F("generation") + 1
        )
    return written


def schedule_update(project: Project) -> None:
    """After the caller's transaction (an import) commits: the new traces' vectors, off the request path."""
    enqueue(UPDATE_TASK, project.pk)


Vectorise = Callable[[Sequence[str]], np.ndarray]  # texts in, unit-length rows out, in one space


class _Embeddings:
    """The endpoint's /embeddings as a Vectorise: batched requests through the LLM client (its retries,
    key handling, address check and the rate limit shared with the project's LLM runs)."""

    def __init__(self, build: TraceRepresentation) -> None:
        self.build = build
        config = get_config(build.project)
        endpoint = Endpoint(
            base_url=config.base_url,
            model=build.model,
            api_key=config.api_key(),
            timeout=config.timeout_seconds,
            requests_per_minute=config.requests_per_minute,
        )
        limiter = RateLimiter(limiter_key(config), config.requests_per_minute, counter=cache)
        self.client = ChatClient(endpoint, limiter=limiter, allowed_base_urls=settings.LLM_ALLOWED_BASE_URLS)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            if not _may_go_on(self.build):
                raise _Stopped
            batch = [text[:EMBED_CHARS] or " " for text in texts[start : start + EMBED_BATCH]]
            rows.extend(self.client.embed(batch, self.build.model).vectors)
        lengths = {len(row) for row in rows}
        if len(lengths) > 1:
            raise SimilarError("the embeddings model answered vectors of different lengths")
        length = lengths.pop() if lengths else self.build.dimensions
        if not 0 < length <= MAX_DIMENSIONS:
            raise SimilarError(f"the embeddings have {length} dimensions (at most {MAX_DIMENSIONS})")
        if self.build.dimensions and length != self.build.dimensions:
            raise SimilarError(
                f"the embeddings model now answers {length} dimensions, not {self.build.dimensions}: rebuild"
            )
        if not self.build.dimensions:
            TraceRepresentation.objects.filter(pk=self.build.pk).update(dimensions=length)
            self.build.dimensions = length
        return normalised(np.asarray(rows, dtype=np.float32))


@contextmanager
def _vectoriser(build: TraceRepresentation) -> Iterator[Vectorise]:
    """The build's way from texts to vectors (fitting the TF-IDF first if it has not been yet)."""
    if build.method == Method.EMBEDDINGS:
        embeddings = _Embeddings(build)
        try:
            yield embeddings
        finally:
            embeddings.client.close()
        return
    if not build.fitted:
        _fit(build)
    yield TfidfModel.from_bytes(bytes(build.fitted)).transform


def _fit(build: TraceRepresentation) -> None:
    """Fit the TF-IDF + SVD on a sample of the project's traces (the same sample for the same traces)."""
    ids = list(Trace.objects.in_project(build.project).order_by("pk").values_list("pk", flat=True))
    if len(ids) < 2:
        raise SimilarError("the project needs at least two traces to compare")
    sample = sorted(random.Random(build.version).sample(ids, FIT_SAMPLE)) if len(ids) > FIT_SAMPLE else ids
    texts = [text for chunk in _chunks(sample, CHUNK_TRACES) for _, text in _texts(chunk)]
    try:
        model = fit_tfidf(texts)
    except ValueError as error:
        raise SimilarError(str(error)) from None
    build.fitted = model.to_bytes()
    build.dimensions = model.dimensions
    TraceRepresentation.objects.filter(pk=build.pk).update(fitted=build.fitted, dimensions=build.dimensions)


def _missing(build: TraceRepresentation, limit: int) -> list[int]:
    have = TraceVector.objects.filter(project_id=build.project_id, version=build.version).values("trace_id")
    return list(
        Trace.objects.in_project(build.project_id)
        .exclude(pk__in=have)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )


def _write_missing(build: TraceRepresentation, vectorise: Vectorise) -> int:
    """Vectors for every trace of the project without one in `build`, a chunk per transaction; returns
    how many were written. Stops, before the next chunk or embedding batch, when the build was stopped or
    failed meanwhile."""
    written = 0
    held = TraceVector.objects.filter(project_id=build.project_id, version=build.version).count()
    if build.method == Method.EMBEDDINGS and held == 0:
        _check_embedding_cap(Trace.objects.in_project(build.project_id).count())
    while ids := _missing(build, CHUNK_TRACES):
        if not _may_go_on(build):
            break
        if build.method == Method.EMBEDDINGS:
            _check_embedding_cap(held + written + len(ids))
        pairs = list(_texts(ids))
        try:
            vectors = vectorise([text for _, text in pairs])
        except _Stopped:
            break
        with transaction.atomic():
            TraceVector.objects.bulk_create(
                [
                    TraceVector(
                        project_id=build.project_id, version=build.version, trace_id=pk, vector=pack(v)
                    )
                    for (pk, _), v in zip(pairs, vectors, strict=True)
                ],
                ignore_conflicts=True,  # a second worker on the same chunk writes the same vectors
            )
            updated = TraceRepresentation.objects.filter(
                pk=build.pk, status__in=(JobStatus.RUNNING, JobStatus.SUCCEEDED)
            ).update(traces_done=F("traces_done") + len(pairs), heartbeat_at=timezone.now())
        if not updated:
            break
        written += len(pairs)
    return written


class _Stopped(Exception):
    """The build was stopped (or failed) while a chunk was being embedded: nothing more is sent."""


def _may_go_on(build: TraceRepresentation) -> bool:
    """Whether the build (or the update of the current representation) may send or write more: not once
    its owner stopped it, nor once it failed."""
    return TraceRepresentation.objects.filter(
        pk=build.pk, status__in=(JobStatus.RUNNING, JobStatus.SUCCEEDED)
    ).exists()


def _check_embedding_cap(traces: int) -> None:
    if traces > MAX_EMBEDDED_TRACES:
        raise SimilarError(
            f"an embeddings representation holds at most {MAX_EMBEDDED_TRACES:,} traces and this one would "
            f"hold {traces:,}: clear the embeddings model in the LLM settings to use TF-IDF (no cap, no cost)"
        )


def _chunks(ids: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _texts(ids: Sequence[int]) -> Iterator[tuple[int, str]]:
    """(trace id, text) for `ids`, in order: task and steps, each step's content cut in SQL (STEP_CHARS)."""
    tasks = dict(Trace.objects.filter(pk__in=ids).values_list("pk", "task"))
    steps: dict[int, list[tuple[str, str]]] = {pk: [] for pk in ids}
    rows = (
        Step.objects.filter(trace_id__in=ids)
        .order_by("trace_id", "index")
        .values_list("trace_id", "tool_name", Substr("content", 1, STEP_CHARS))
    )
    for trace_id, tool, content in rows.iterator(chunk_size=5_000):
        steps[trace_id].append((tool, content))
    for pk in ids:
        if pk in tasks:
            yield pk, trace_text(tasks[pk], steps[pk])
