"""The token settings page (/account/tokens/): a user's own tokens, and for an owner each owned project's
ingest tokens.

One partial per swap target: `_tokens_mine.html` (#my-tokens) and `_tokens_project.html`
(#project-tokens-SLUG). A new key is rendered once, in the response to the request that created it, and
never again (only its digest is stored). An htmx error answers the section again with the message inside it
(422, which static/js/site.js swaps); a plain post answers the whole page, so nothing needs JavaScript.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, access_project, access_tokens, owned_projects
from annotator.models import ApiToken, Project
from annotator.services.api_tokens import (
    do_issue_ingest_token,
    do_issue_token,
    do_revoke_token,
    do_revoke_tokens,
)

# Days until a new token expires (0: never). The site's default (API_TOKEN_TTL_DAYS) is preselected.
EXPIRY_CHOICES = ((7, "7 days"), (30, "30 days"), (90, "90 days"), (365, "1 year"), (0, "Never"))
NAME_MAX = 100


class TokenFormError(ValueError):
    """What the user typed cannot make a token; the message says which field and why."""


def _expiry_choices() -> list[tuple[int, str]]:
    choices = list(EXPIRY_CHOICES)
    if all(days != settings.API_TOKEN_TTL_DAYS for days, _ in choices):
        choices.insert(0, (settings.API_TOKEN_TTL_DAYS, f"{settings.API_TOKEN_TTL_DAYS} days"))
    return choices


def parse_token_form(data) -> tuple[str, int]:
    """(name, days) from a create form; TokenFormError names the field that is wrong."""
    name = (data.get("name") or "").strip()
    if not name:
        raise TokenFormError("Give the token a name, so you can tell it apart later (e.g. “laptop script”).")
    if len(name) > NAME_MAX:
        raise TokenFormError(f"The name is {len(name)} characters long; at most {NAME_MAX}.")
    text = (data.get("expires_in_days") or "").strip()
    allowed = {days for days, _ in _expiry_choices()}
    if not text.isdigit() or int(text) not in allowed:
        raise TokenFormError("Choose when the token expires from the list.")
    return name, int(text)


def _section(user, project: Project | None) -> dict[str, Any]:
    tokens = access_tokens(user)
    if project is None:
        tokens = tokens.filter(user=user, project__isnull=True)
    else:
        tokens = tokens.filter(project=project).select_related("user")
    return {
        "project": project,
        "create_url": reverse("project-token-create", args=[project.slug])
        if project
        else reverse("account-token-create"),
        "target": f"#project-tokens-{project.slug}" if project else "#my-tokens",
        "tokens": list(tokens.order_by("-created_at")),
        "expiry_choices": _expiry_choices(),
        "default_days": settings.API_TOKEN_TTL_DAYS,
    }


def _page(request: HttpRequest, extra: dict[str, Any] | None = None, status: int = 200) -> HttpResponse:
    """The whole page; `extra` is `{slug or "": {key, name, error, note}}` for the section that changed."""
    extra = extra or {}
    mine = {**_section(request.user, None), **extra.get("", {})}
    projects = [
        {**_section(request.user, project), **extra.get(project.slug, {})}
        for project in owned_projects(request.user).order_by("name")
    ]
    return render(request, "annotator/tokens.html", {"mine": mine, "projects": projects}, status=status)


def _answer(
    request: HttpRequest, project: Project | None, changes: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """htmx: the section's partial with `changes` (key shown once, note or error); otherwise the page."""
    if request.htmx:
        template = "_tokens_project.html" if project else "_tokens_mine.html"
        context = {**_section(request.user, project), **changes}
        return render(request, f"annotator/partials/{template}", {"section": context}, status=status)
    return _page(request, {project.slug if project else "": changes}, status=status)


@require_GET
def tokens_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
def create_token(request: HttpRequest) -> HttpResponse:
    try:
        name, days = parse_token_form(request.POST)
    except TokenFormError as error:
        return _answer(request, None, {"error": str(error), "name": request.POST.get("name", "")}, status=422)
    token, key = do_issue_token(request.user, name=name, ttl_days=days)
    return _answer(request, None, {"key": key, "new_token": token})


@require_POST
def create_project_token(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    try:
        name, days = parse_token_form(request.POST)
    except TokenFormError as error:
        changes = {"error": str(error), "name": request.POST.get("name", "")}
        return _answer(request, project, changes, status=422)
    token, key = do_issue_ingest_token(project, request.user, name=name, ttl_days=days)
    return _answer(request, project, {"key": key, "new_token": token})


@require_POST
def revoke_token(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = do_revoke_token(request.user, token_id)
    except ApiToken.DoesNotExist:
        raise Http404("No such token: it may have been revoked already (reload the page)") from None
    note = f"Revoked “{token.name or token.prefix}” ({token.prefix}…): it no longer signs anything in."
    if not request.htmx:
        messages.success(request, note)
        return redirect("account-tokens")
    return _answer(request, token.project, {"note": note})


@require_POST
def revoke_all_tokens(request: HttpRequest) -> HttpResponse:
    count = do_revoke_tokens(request.user)
    note = f"Revoked all your tokens ({count}). Your projects' ingest tokens are unchanged."
    if not request.htmx:
        messages.success(request, note)
        return redirect("account-tokens")
    return _answer(request, None, {"note": note})
