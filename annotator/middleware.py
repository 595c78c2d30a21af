"""One guard in front of every view for input no view should have to think about.

- An upload larger than ``IMPORT_MAX_UPLOAD_MB`` is refused with 413 from its Content-Length, before a
  byte of it is read (otherwise the CSRF check alone would spool it to disk).
- A form past Django's bounds (too many fields or files, too large) is refused with 400 in the caller's
  shape rather than Django's bare 400 page.
- A NUL character in the path, the query string, a form field (names, values, uploaded file names) or a
  JSON body is refused with 400. PostgreSQL text cannot hold NUL, so without this guard each of those
  inputs reached the database and answered 500; checking here means no view can forget.

Answers are JSON under /api/ (DRF's ``{"detail": ...}`` shape), an alert fragment for htmx, plain text
otherwise; they name the field, never echo the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.html import format_html

from annotator.services.uploads import MB, max_upload_bytes, upload_too_large_message

# Room for the form fields and multipart boundaries that travel with the files.
_FORM_SLACK = 1 * MB
_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
# \u0000 in JSON text, unless its backslash is itself escaped (then it is the literal text "\u0000").
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000", re.IGNORECASE)
NUL = "\x00"
# The OTLP endpoints read their own bodies (gzip, protobuf or JSON, larger than a form) and refuse a NUL
# per span themselves (annotator/live/otlp.py).
_OTLP = re.compile(r"^/api/projects/[^/]+/otlp/v1/(?:traces|logs)$")
# Django's own bounds on a form (DATA_UPLOAD_MAX_NUMBER_FIELDS, _FILES, _MEMORY_SIZE): reading past one
# raises, and unanswered that is Django's bare 400 page, not the API's error shape.
OVERSIZED_FORM = (TooManyFieldsSent, TooManyFilesSent, RequestDataTooBig)


def oversized_form_message(error: Exception) -> str:
    if isinstance(error, TooManyFieldsSent):
        return "The request sends too many fields (DATA_UPLOAD_MAX_NUMBER_FIELDS)."
    if isinstance(error, TooManyFilesSent):
        return "The request sends too many files (DATA_UPLOAD_MAX_NUMBER_FILES)."
    return "The request body is too large to read as a form (DATA_UPLOAD_MAX_MEMORY_SIZE)."


class InputGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        size = _content_length(request)
        if size > max_upload_bytes() + _FORM_SLACK:
            return refuse(request, 413, upload_too_large_message(size))
        try:
            problem = _nul_problem(request)
        except MultiPartParserError:
            return refuse(request, 400, "The form data is malformed (a broken multipart body).")
        except OVERSIZED_FORM as error:
            return refuse(request, 400, oversized_form_message(error))
        if problem:
            return refuse(request, 400, problem)
        return self.get_response(request)


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _nul_problem(request: HttpRequest) -> str:
    if NUL in request.path:
        return "The address contains a NUL character (\\0)."
    problem = _in_fields(request.GET.lists(), "Query parameter")
    if problem:
        return problem
    content_type = request.content_type or ""
    if request.method == "POST" and content_type in _FORM_TYPES:
        problem = _in_fields(request.POST.lists(), "Field")
        if problem:
            return problem
        for name, uploads in request.FILES.lists():
            if any(NUL in (upload.name or "") for upload in uploads):
                return f"The name of a file sent as {_label(name)} contains a NUL character (\\0)."
    elif (content_type == "application/json" or content_type.endswith("+json")) and not _OTLP.match(
        request.path
    ):
        body = request.body
        if b"\x00" in body or _JSON_NUL.search(body):
            return "The JSON body contains a NUL character (\\0 or \\u0000), which text here cannot hold."
    return ""


def _in_fields(pairs, kind: str) -> str:
    for name, values in pairs:
        if NUL in name:
            return f"A {kind.lower()} name contains a NUL character (\\0)."
        if any(NUL in value for value in values):
            return f"{kind} {_label(name)} contains a NUL character (\\0), which text here cannot hold."
    return ""


def _label(name: str) -> str:
    return repr(name[:60])


def refuse(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """The error in the shape the caller reads: JSON for the API, an alert for htmx, else plain text."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    if request.headers.get("HX-Request"):
        return HttpResponse(
            format_html('<div class="card error" role="alert">{}</div>', message), status=status
        )
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
