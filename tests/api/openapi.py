"""Every API response a test produces is checked against the OpenAPI schema the server publishes.

The way Zulip does it: the test client is wrapped (tests/conftest.py turns it on for every test), and each
JSON answer under /api/ is validated against drf-spectacular's document for its path, method and status.
The check is strict so the documentation and the bodies cannot drift apart:

- the status code must be documented for the operation (every 4xx too);
- the body must match the documented schema, with no undocumented keys (`additionalProperties: false` is
  applied to every documented object) and `null` only where the schema says `nullable`.

Which operations the suite exercised is recorded in `COVERED`, so a test can prove that every route of the
API was checked at least once (tests/api/test_contract.py).
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import jsonschema
from django.urls import Resolver404
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

OPENAPI_URI = "urn:openapi"
METHODS = ("get", "post", "put", "patch", "delete")
# Not API operations: the schema and the docs page describe the API, the DRF root lists it.
UNDOCUMENTED_ROUTES = {"/api/schema/", "/api/docs/", "/api/"}

# (OpenAPI path, method) of every operation a test answered; see module docstring.
COVERED: set[tuple[str, str]] = set()


@cache
def openapi_document() -> dict[str, Any]:
    """The document /api/schema/ serves, as plain JSON."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(schema, renderer_context={}))


def operations() -> set[tuple[str, str]]:
    return {
        (path, method)
        for path, item in openapi_document()["paths"].items()
        for method in METHODS
        if method in item
    }


def _strict(node: Any) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema draft 7: `nullable` becomes a null alternative, refs point into the
    document, documented objects allow no other keys, and write-only properties are never required."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items()}
    if isinstance(out.get("$ref"), str) and out["$ref"].startswith("#/"):
        out["$ref"] = OPENAPI_URI + out["$ref"]
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if "properties" in out and "required" in out:
        # Write-only properties (a password) are required in requests and never sent back.
        out["required"] = [name for name in out["required"] if not out["properties"][name].get("writeOnly")]
    if out.pop("nullable", False):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _registry() -> Registry:
    document = _strict(openapi_document())
    return Registry().with_resource(
        OPENAPI_URI, Resource.from_contents(document, default_specification=DRAFT7)
    )


def openapi_path(route: str) -> str:
    """Django's route for a resolved URL -> the OpenAPI path template (`/api/projects/{slug}/`)."""
    route = route.replace("^", "").replace("$", "")
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
    return "/" + route


def check_response(method: str, response) -> None:
    """Raise AssertionError when an API response does not match the schema (see the module docstring)."""
    try:
        # Lazy on the test client: the URL is resolved on first use.
        route = response.resolver_match.route
    except (AttributeError, Resolver404):
        return  # no route: the 404 page, not an API answer
    if not route.startswith("api/") or "format" in route:
        return
    path = openapi_path(route)
    method = method.lower()
    if path in UNDOCUMENTED_ROUTES or response.status_code >= 500:
        return
    item = openapi_document()["paths"].get(path)
    assert item is not None, f"{path} answers but the schema does not document it"
    operation = item.get(method)
    if operation is None:
        assert response.status_code == 405, f"{method.upper()} {path} answers but is not documented"
        return
    COVERED.add((path, method))
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, (
        f"{method.upper()} {path} answered {response.status_code}, which the schema does not document "
        f"(documented: {', '.join(operation['responses'])})"
    )
    content = documented.get("content")
    if getattr(response, "streaming", False):  # a streamed file (label tables): its media type is documented
        media_type = response["Content-Type"].split(";")[0]
        assert content and media_type in content, (method, path, media_type, list(content or ()))
        return
    body = response.content
    if not content:
        assert not body, f"{method.upper()} {path} {response.status_code}: a body where none is documented"
        return
    if response["Content-Type"].split(";")[0].strip() in set(content) - {"application/json"}:
        return  # another documented media type (OTLP's protobuf answers): not JSON to validate
    media = content.get("application/json")
    if media is None or "schema" not in media:
        return
    assert response["Content-Type"].startswith("application/json"), (method, path, response["Content-Type"])
    schema = _strict(media["schema"])
    validator = jsonschema.Draft7Validator(schema, registry=_registry())
    errors = sorted(validator.iter_errors(json.loads(body)), key=lambda error: list(error.absolute_path))
    if errors:
        where = "\n".join(
            f"  at {'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message[:300]}"
            for error in errors[:10]
        )
        raise AssertionError(
            f"{method.upper()} {path} {response.status_code}: the body does not match the schema\n{where}"
        )


def install(monkeypatch) -> None:
    """Wrap the test client (Django's and DRF's APIClient both end in Client.request) to check every answer."""
    from django.test.client import Client

    original = Client.request

    def request(self, **environ):
        response = original(self, **environ)
        check_response(environ.get("REQUEST_METHOD", "GET"), response)
        return response

    monkeypatch.setattr(Client, "request", request)
