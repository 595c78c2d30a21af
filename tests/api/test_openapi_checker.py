"""The response checker itself (tests/api/openapi.py): it must catch the drifts it exists for."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.api import openapi

ROUTE = "api/projects/<slug:slug>/llm-runs/<int:run_id>/resume/"


class _Answer(dict):
    def __init__(self, status: int, body) -> None:
        super().__init__({"Content-Type": "application/json"})
        self.status_code = status
        self.content = json.dumps(body).encode()
        self.resolver_match = SimpleNamespace(route=ROUTE)


@pytest.mark.parametrize(
    ("status", "body", "complaint"),
    [
        (409, {"detail": "Run 3 is succeeded", "extra": 1}, "does not match"),  # an undocumented key
        (409, {"errors": ["no detail"]}, "does not match"),  # a required key missing
        (409, {"detail": None}, "does not match"),  # null where the schema says string
        (418, {"detail": "teapot"}, "does not document"),  # an undocumented status
    ],
)
def test_it_refuses_bodies_and_codes_the_schema_does_not_document(status, body, complaint):
    with pytest.raises(AssertionError, match=complaint):
        openapi.check_response("POST", _Answer(status, body))


def test_it_accepts_a_documented_error():
    openapi.check_response("POST", _Answer(409, {"detail": "Run 3 is succeeded"}))
