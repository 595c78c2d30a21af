"""The codebook page (owners): derive the next taxonomy version from changes, preview where every mode goes,
and confirm the mapping that moves the project there."""

from __future__ import annotations

import yaml
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotator.access import MANAGE_ROLES, access_project
from annotator.models import ModeProposal, Project, TaxonomyMigration
from annotator.services.evolution import (
    MigrationError,
    do_apply_migration,
    do_preview_migration,
    mapping_text,
    parse_changes_text,
    preview_rows,
)
from annotator.services.proposals import visible_proposals

EXAMPLE = """\
- op: add
  code: FM-2.7
  name: Tool call loop
  definition: The agent repeats the same tool call with identical arguments.
  category: FC2
  proposals: [12]
- op: rename
  code: FM-1.1
  new_code: FM-1.1a
  name: Disobey the task specification
- op: merge
  codes: [FM-1.3, FM-1.4]
  into: {code: FM-1.3, name: Step repetition or lost context}
- op: split
  code: FM-3.2
  into:
    - {code: FM-3.2a, name: No verification, definition: Nothing is checked.}
    - {code: FM-3.2b, name: Wrong verification, definition: The wrong thing is checked.}
- op: retire
  code: FM-2.1
- op: edit
  code: FM-2.2
  guidance: Only when the agent could have asked.
"""


def _page(
    request: HttpRequest, project: Project, *, changes: str = "", label: str = "", error: str = "", code=200
):
    context = {
        "project": project,
        "version": project.taxonomy_version,
        "modes": project.taxonomy_version.modes.order_by("order"),
        "migrations": project.taxonomy_migrations.select_related("from_version", "to_version")[:50],
        "proposals": visible_proposals(project, request.user)
        .exclude(status=ModeProposal.Status.DECLINED)
        .select_related("trace")[:200],
        "changes": changes,
        "label": label,
        "error": error,
        "example": EXAMPLE,
    }
    return render(request, "annotator/codebook.html", context, status=code)


def codebook(request: HttpRequest, slug: str) -> HttpResponse:
    """GET; `?proposals=3,4` (the proposals page's "Draft a mode from these") starts the changes with an
    `add` made from those proposals."""
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    ids = [int(i) for i in request.GET.get("proposals", "").split(",") if i.strip().isdigit() and len(i) < 10]
    chosen = list(visible_proposals(project, request.user).filter(pk__in=ids[:100]).order_by("pk"))
    return _page(request, project, changes=_draft_add(chosen) if chosen else "")


def _draft_add(proposals: list[ModeProposal]) -> str:
    name = next((p.suggested_name for p in proposals if p.suggested_name), "")
    found = next((p.candidate for p in proposals if p.discovery_run_id), {})  # a discovered, gated candidate
    draft = {
        "op": "add",
        "code": found.get("code", ""),
        "name": name,
        "definition": proposals[0].text,
        **({"guidance": found["guidance"]} if found.get("guidance") else {}),
        "category": "",  # the owner fills in the code and the category
        "proposals": [p.pk for p in proposals],
    }
    return yaml.safe_dump([draft], sort_keys=False, allow_unicode=True, width=100)


@require_POST
def preview(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    text, label = request.POST.get("changes", ""), request.POST.get("label", "")
    try:
        migration = do_preview_migration(project, parse_changes_text(text), actor=request.user, label=label)
    except MigrationError as error:
        return _page(request, project, changes=text, label=label, error=str(error), code=400)
    return redirect("codebook-migration", slug, migration.pk)


def _migration(project: Project, migration_id: int) -> TaxonomyMigration:
    found = (
        project.taxonomy_migrations.select_related("from_version", "to_version")
        .filter(pk=migration_id)
        .first()
    )
    if found is None:
        raise Http404("No such taxonomy migration in this project")
    return found


def _preview_page(request, project, migration, *, mapping=None, error: str = "", code=200) -> HttpResponse:
    rows = preview_rows(migration)
    shown = mapping or mapping_text(migration.applied_mapping or migration.mapping)
    for row in rows["old"]:
        row["field"] = shown.get(row["code"], "")
    context = {
        "project": project,
        "migration": migration,
        "rows": rows,
        "error": error,
        "can_apply": migration.status == TaxonomyMigration.Status.PREVIEWED,
    }
    return render(request, "annotator/codebook_migration.html", context, status=code)


def migration_page(request: HttpRequest, slug: str, migration_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    return _preview_page(request, project, _migration(project, migration_id))


@require_POST
def apply(request: HttpRequest, slug: str, migration_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    migration = _migration(project, migration_id)
    mapping = {key[4:]: value for key, value in request.POST.items() if key.startswith("map:")}
    if request.POST.get("confirm") != "yes":
        error = "Tick “I checked this mapping” to move the project"
        return _preview_page(request, project, migration, mapping=mapping, error=error, code=400)
    try:
        done = do_apply_migration(migration, mapping, actor=request.user)
    except MigrationError as error:
        return _preview_page(request, project, migration, mapping=mapping, error=str(error), code=400)
    s = done.summary
    messages.success(
        request,
        f"The project now uses v{done.to_version.number}: {s['annotations']} annotations changed, "
        f"{s['rechecks']} re-checks queued for annotators.",
    )
    return redirect("codebook", slug)
