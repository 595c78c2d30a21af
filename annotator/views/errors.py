"""Our own 403, 404 and 500 pages: the reason in plain words and a way back, never a server path.

Under /api/ they answer in the API's error shape (JSON) instead. htmx requests get the same page; static/js/site.js reads its [data-error-message] and shows it in the
page's alert region instead of swapping a whole page into a fragment.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader

from annotator.api.errors import api_error_json

# A message written for people is a sentence; anything that looks like a path or a URL pattern is not.
_UNSAFE = re.compile(r"[/\\]|\.py\b|Traceback")


def _reason(exception: Exception | None, default: str) -> str:
    text = str(exception or "").strip()
    if not text or _UNSAFE.search(text) or len(text) > 300:
        return default
    return text if text.endswith((".", "!", "?")) else text + "."


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    reason = _reason(exception, "Your role does not allow this page or action.")
    return render(request, "403.html", {"reason": reason}, status=403)


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    reason = _reason(exception, "There is nothing at this address.")
    if _is_api(request):  # a script gets the API's error shape, not a page
        return api_error_json(reason, status=404)
    response = render(request, "404.html", {"reason": reason}, status=404)
    response.is_own_error_page = True
    return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form from a page that is out of date (signed out or in again elsewhere, or a very old tab)."""
    reason = "This page is out of date (your session ended or changed). Reload it and try again."
    return render(request, "403.html", {"reason": reason}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return api_error_json("The server failed to answer this request. Try again later.", status=500)
    # No request context: the failure may have come from a context processor or the database.
    return HttpResponse(loader.get_template("500.html").render(), status=500)


class OwnNotFoundPageMiddleware:
    """With DEBUG on (the `make run` demo) Django answers an unknown address with its URL list, a page for
    developers; the people using the demo get our 404 page instead. Other HTML 404s are ours already, and
    JSON ones (the API) are left alone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and response.get("Content-Type", "").startswith("text/html")
            and not getattr(response, "is_own_error_page", False)
        ):
            return not_found(request)
        return response
