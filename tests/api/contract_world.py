"""What the API contract tests share (tests/api/test_contract.py, test_contract_errors.py and
test_schemathesis.py): a world with something in every state the API reports, and clients that send an API
token. Import the fixtures by name; `_small_jobs` is autouse where it is imported.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.models import Assignment, LLMRun, LLMTraceResult, PromptTemplate
from annotator.services.adjudication import do_check_trace
from tests.factories import UserFactory, api_token
from tests.labels import project_trace, submit


@pytest.fixture(autouse=True)
def _small_jobs(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    settings.UPLOAD_DIR = tmp_path / "uploads"
    settings.AGREEMENT_BOOTSTRAP = 20
    settings.AGREEMENT_PAIR_BOOTSTRAP = 10
    settings.LLM_ALLOWED_BASE_URLS = ["http://127.0.0.1:11434/v1"]  # the default base URL, a local Ollama


def auth_header(user) -> str:
    return f"Token {api_token(user)}"


def _as(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=auth_header(user))
    return client


@pytest.fixture
def world(project, owner, annotator_a, annotator_b, adjudicator):
    """A disputed trace (an open adjudication item), an open assignment for Ana, an LLM run with a failure."""
    disputed = project_trace(project)
    submit(project, disputed, annotator_a, {"FM-1.1": [2], "FM-3.1": [4]})
    submit(project, disputed, annotator_b, {"FM-1.1": [3]})
    item = do_check_trace(project.pk, disputed.pk)
    open_trace = project_trace(project)
    slot = Assignment.objects.create(project=project, trace=open_trace, annotator=annotator_a)
    done = Assignment.objects.get(project=project, trace=disputed, annotator=annotator_a)
    prompt = PromptTemplate.objects.create(project=project, number=1, instructions="Label it.")
    rater = UserFactory(username="llm:contract-model")
    run = LLMRun.objects.create(
        project=project,
        batch=disputed.batch,
        prompt=prompt,
        rater=rater,
        model="contract-model",
        status=LLMRun.Status.SUCCEEDED,
        total=1,
        failed=1,
    )
    LLMTraceResult.objects.create(
        run=run, trace=disputed, status=LLMTraceResult.Status.FAILED, error="no JSON", raw_output="hmm"
    )
    return {
        "slug": project.slug,
        "item": item,
        "trace": disputed,
        "slot": slot,
        "done": done,
        "run": run,
        "batch": disputed.batch.name,
    }
