"""Schemathesis over the published schema, in-process (WSGI, no live server), as an owner and an annotator.

For every operation it generates valid requests and invalid ones (wrong types, missing required fields,
out-of-range numbers: `real_names: {}`, a missing `q`, `limit` past 2^31) and checks each answer:

- no 5xx;
- the status code is documented for the operation (every 4xx too);
- the content type and the body match the schema (error bodies included: one documented shape).

The project slug and object ids are fixed to a real world, so requests reach the views rather than the URL
resolver's 404. The number of examples is bounded so the run takes about a minute on a small machine.
NUL bytes are left out of generated strings: refusing them with a 400 everywhere is the job of one request
guard (issue 11, point 9), tested with it, not of each endpoint.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotator.models import Membership, Project
from annotator.services.evolution import do_preview_migration
from tests.api import openapi
from tests.api.contract_world import auth_header, world  # noqa: F401 (the fixture)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Examples per operation and generation mode: (owner, annotator). For a deeper run by hand, scale them and
# pick another seed: API_FUZZ_SCALE=20 API_FUZZ_SEED=7 pytest tests/api/test_schemathesis.py
SCALE = int(os.environ.get("API_FUZZ_SCALE", "1"))
SEED = os.environ.get("API_FUZZ_SEED")
EXAMPLES = {GenerationMode.POSITIVE: (6 * SCALE, 3 * SCALE), GenerationMode.NEGATIVE: (6 * SCALE, 3 * SCALE)}


def _runner(strategy, headers: dict[str, str], count: int):
    @settings(
        max_examples=count,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(int(SEED or 0))
    @given(case=strategy)
    def run(case):
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS, headers=headers)

    return run


@pytest.fixture
def wsgi_app(settings):
    """Django's WSGI app, calling into this test's transaction: like Django's test client, requests must not
    close the connection the test's transaction lives on."""
    settings.ALLOWED_HOSTS = ["*"]
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def _schema(app):
    schema = schemathesis.openapi.from_dict(openapi.openapi_document())
    schema.app = app
    schema.config.generation.update(allow_x00=False, deterministic=True, database="none")
    return schema


def _ids(world) -> dict[str, object]:  # noqa: F811
    return {
        "slug": world["slug"],
        "trace_id": world["trace"].pk,
        "item_id": world["item"].pk,
        "assignment_id": world["slot"].pk,
        "run_id": world["run"].pk,
        "membership_id": Membership.objects.get(
            project__slug=world["slug"], user__username="ben-annotator", role="annotator"
        ).pk,
        "job_id": 1,
        "export_id": 1,
        # A previewed taxonomy migration: a generated mapping never names every mode, so it is never applied.
        "migration_id": do_preview_migration(
            Project.objects.get(slug=world["slug"]), [{"op": "edit", "code": "FM-1.1", "guidance": "fuzz"}]
        ).pk,
    }


def test_the_api_keeps_its_contract_under_generated_requests(world, wsgi_app, owner, annotator_a):  # noqa: F811
    schema = _schema(wsgi_app)
    ids = _ids(world)
    tokens = {0: auth_header(owner), 1: auth_header(annotator_a)}
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        fixed = {**ids, "slug": "mast"} if operation.path.startswith("/api/taxonomies/") else ids
        path_parameters = {name: value for name, value in fixed.items() if f"{{{name}}}" in operation.path}
        # With the path fixed, an operation without query parameters or a body has nothing to get wrong.
        negatable = len(operation.query) > 0 or len(operation.body) > 0
        for mode, counts in EXAMPLES.items():
            if mode == GenerationMode.NEGATIVE and not negatable:
                continue
            for persona, count in enumerate(counts):
                strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)
                run = _runner(strategy, {"Authorization": tokens[persona]}, count)
                try:
                    run()
                except Exception as error:  # collect every operation's failure, then report them all
                    who = ("owner", "annotator")[persona]
                    failures.append(f"{operation.label} ({mode.value}, {who}): {str(error)[:1500]}")
    assert not failures, "\n\n".join(failures)
