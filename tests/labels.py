"""Submit annotations the way the annotation page does (through the service), for adjudication and
agreement tests."""

from __future__ import annotations

from annotator.models import Annotation, Assignment, Project
from annotator.services.annotations import do_submit_annotation
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput
from tests.factories import trace_with_steps


def project_trace(project: Project, n_steps: int = 10, **kwargs):
    """A trace in one of the project's batches (so reviewers may open it)."""
    trace = trace_with_steps(n_steps, **kwargs)
    project.batches.add(trace.batch)
    return trace


def submit(
    project: Project,
    trace,
    user,
    labels: dict[str, list[int]] | None = None,
    *,
    primary: str | None = None,
) -> Annotation:
    """Submit (or re-submit) `user`'s annotation of `trace`: mode code -> evidence steps; no labels means
    "no failure observed"."""
    labels = labels or {}
    assignment, _ = Assignment.objects.get_or_create(project=project, trace=trace, annotator=user)
    assignment.project = project
    existing = Annotation.objects.filter(assignment=assignment).first()
    payload = AnnotationPayload(
        labels=tuple(
            LabelInput(mode=code, primary=code == primary, evidence=tuple(Evidence(step) for step in steps))
            for code, steps in labels.items()
        ),
        no_failure=not labels,
    )
    return do_submit_annotation(
        assignment, payload, actor=user, base_version=existing.version if existing else 0
    )
