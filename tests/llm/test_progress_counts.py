"""An LLM rater's work does not count as the team's labelling progress."""

from __future__ import annotations

from annotator.models import Assignment, Membership
from annotator.raters import get_llm_rater
from tests.factories import BatchFactory, trace_with_steps


def test_the_project_page_counts_human_assignments_only(client, project, owner, annotator_a):
    batch = BatchFactory()
    project.batches.add(batch)
    trace = trace_with_steps(3, batch=batch)
    model = get_llm_rater("qwen2.5-7b")
    Membership.objects.create(project=project, user=model, role="annotator")
    Assignment.objects.create(project=project, trace=trace, annotator=model, status="submitted")
    Assignment.objects.create(project=project, trace=trace, annotator=annotator_a, status="pending")
    client.force_login(owner)
    counts = client.get(f"/p/{project.slug}/").context["counts"]
    assert counts["total"] == 1 and counts["submitted"] == 0
