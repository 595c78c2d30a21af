"""The API keeps its contract on bad input: a 400 naming the field, in the one error shape, never a 500.

Each test is a request that once answered otherwise; the walk over every operation is
tests/api/test_contract.py.
"""

from __future__ import annotations

from rest_framework.test import APIClient

from tests.api.contract_world import _as, _small_jobs  # noqa: F401 (the autouse fixture)
from tests.labels import project_trace, submit


def test_an_export_refuses_an_object_where_a_flag_belongs(project, owner):
    """`real_names: {}` used to count as "false"; a flag that is not a boolean is now a 400 naming it."""
    response = _as(owner).post(f"/api/projects/{project.slug}/exports/", {"real_names": {}}, format="json")
    assert response.status_code == 400
    assert response.json()["fields"] == {"real_names": ["Must be a valid boolean."]}


def test_a_search_without_q_is_refused(project, owner):
    trace = project_trace(project)
    response = _as(owner).get(f"/api/projects/{project.slug}/traces/{trace.pk}/search/")
    assert response.status_code == 400 and "q" in response.json()["fields"]


def test_error_bodies_share_one_shape(project, owner, annotator_a, outsider):
    """403, 404, validation and service errors all answer {detail, errors?, fields?}."""
    api = f"/api/projects/{project.slug}"
    bodies = [
        _as(outsider).get(f"{api}/traces/").json(),
        _as(annotator_a).get(f"{api}/llm-runs/").json(),
        _as(owner).post(f"{api}/llm-runs/", {"batch": "missing"}, format="json").json(),
        _as(owner).post(f"{api}/llm-runs/", {"limit": "many"}, format="json").json(),
        APIClient().get(f"{api}/traces/").json(),
    ]
    for body in bodies:
        assert isinstance(body["detail"], str) and set(body) <= {"detail", "errors", "fields"}, body


def test_llm_agreement_survives_a_submit_between_its_reads(
    project, owner, annotator_a, annotator_b, monkeypatch
):
    """A submit landing between the read of the annotations and the read of their labels used to raise a
    KeyError (a 500 from llm-agreement); the late annotation now waits for the next computation."""
    from annotator.services.llm import agreement as llm_agreement

    first, second = project_trace(project), project_trace(project)
    submit(project, first, annotator_a, {"FM-1.1": [1]})
    original = llm_agreement.LabelApplication.objects.filter

    def submit_meanwhile(*args, **kwargs):
        submit(project, second, annotator_b, {"FM-1.2": [2]})
        return original(*args, **kwargs)

    monkeypatch.setattr(llm_agreement.LabelApplication.objects, "filter", submit_meanwhile)
    response = _as(owner).get(f"/api/projects/{project.slug}/llm-agreement/")
    assert response.status_code == 200 and response.json()["raters"] == []


def test_an_llm_run_limit_past_the_column_is_refused(project, owner):
    """`limit` above 2^31-1 used to reach the database and answer 500."""
    batch = project_trace(project).batch
    response = _as(owner).post(
        f"/api/projects/{project.slug}/llm-runs/", {"batch": batch.name, "limit": 2**31}, format="json"
    )
    assert response.status_code == 400 and "limit" in response.json()["fields"]
