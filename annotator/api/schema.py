"""The OpenAPI generator: drf-spectacular's, with the error answers every operation can give documented once.

Any operation can answer 400 (a malformed request), 401 (no credentials), 403 (a role it needs) and 404 (an
unknown or foreign project or object), and an operation that reads a body 415 (a content type it does not
parse), each with ErrorSerializer's body; an operation documents its own
shape for a code (409 conflicts) and that one wins.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse

from annotator.api.errors import ErrorSerializer

DEFAULT_ERRORS = {
    "400": "The request is not valid: `detail` says why, `fields` where",
    "401": "No valid credentials (send `Authorization: Token ...` or sign in)",
    "403": "You are a member of the project without the role this needs",
    "404": "No such project or object, or not one you may see",
}


BODY_ERRORS = {"415": "The body's content type is not one this operation reads"}


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        errors = {**DEFAULT_ERRORS, **(BODY_ERRORS if self.method in ("POST", "PUT", "PATCH") else {})}
        for code, description in errors.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, description=description), code, direction=direction
                )
        return responses
