"""Owners and adjudicators see all annotations of a trace side by side; annotators and outsiders cannot."""

from __future__ import annotations

import pytest

from annotator.services.annotations import do_submit_annotation
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput


@pytest.fixture
def both_labelled(slot_a, slot_b, annotator_a, annotator_b):
    do_submit_annotation(
        slot_a,
        AnnotationPayload(
            labels=(LabelInput("FM-1.3", evidence=(Evidence(2),), note="A saw a loop"),), confidence=4
        ),
        actor=annotator_a,
        base_version=0,
    )
    do_submit_annotation(
        slot_b, AnnotationPayload(labels=(LabelInput("FM-3.2"),)), actor=annotator_b, base_version=0
    )
    return slot_a.trace


@pytest.mark.parametrize("who", ["owner", "adjudicator"])
def test_reviewers_see_both_annotations_side_by_side(client, request, project, both_labelled, who):
    client.force_login(request.getfixturevalue(who))
    html = client.get(f"/p/{project.slug}/t/{both_labelled.pk}/review/").content.decode()
    assert "ana-annotator" in html and "ben-annotator" in html
    assert "FM-1.3" in html and "FM-3.2" in html and "A saw a loop" in html
    assert "2 of 2 submitted" in html
    assert "FM-1.3 · ana-annotator" in html  # evidence marked on step 2


def test_review_steps_partial_keeps_the_evidence_marks(client, project, both_labelled, owner):
    client.force_login(owner)
    html = client.get(
        f"/p/{project.slug}/t/{both_labelled.pk}/review/steps/", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert html.lstrip().startswith('<div id="trace-steps"') and "FM-1.3 · ana-annotator" in html


def test_annotators_get_403_and_outsiders_404(client, project, both_labelled, annotator_a, outsider):
    for user, status in ((annotator_a, 403), (outsider, 404)):
        client.force_login(user)
        for path in (f"t/{both_labelled.pk}/review/", f"t/{both_labelled.pk}/review/steps/", "traces/"):
            assert client.get(f"/p/{project.slug}/{path}").status_code == status, path


def test_the_trace_list_shows_progress_per_trace(client, project, both_labelled, traces, owner):
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/traces/").content.decode()
    assert "2 / 2 submitted" in html and "0 / 2 submitted" in html
    assert f"/p/{project.slug}/t/{both_labelled.pk}/review/" in html
