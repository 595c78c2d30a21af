"""In Chromium: an owner turns a proposal into a new mode and splits another in a new taxonomy version,
checks the preview, confirms the mapping; the annotator finds "re-check" in their queue and on the trace."""

from __future__ import annotations

import pytest

from annotator.models import LabelApplication, Membership, ModeProposal, ModeRecheck, Project
from tests.e2e.test_adjudication_browser import sign_in
from tests.factories import UserFactory
from tests.labels import project_trace, submit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CHANGES = """- op: split
  code: FM-3.2
  into:
    - {code: FM-3.2a, name: No verification, definition: Nothing is checked.}
    - {code: FM-3.2b, name: Wrong verification, definition: The wrong thing is checked.}
- op: rename
  code: FM-1.1
  new_code: FM-1.1r
"""


def test_an_owner_migrates_the_codebook_and_the_annotator_is_asked_to_recheck(browser, live_server):
    from playwright.sync_api import expect

    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="pilot", name="Pilot study", taxonomy_version=resolve_version("mast")
    )
    olivia, ana = UserFactory(username="olivia"), UserFactory(username="ana")
    Membership.objects.create(project=project, user=olivia, role="owner")
    Membership.objects.create(project=project, user=ana, role="annotator")
    trace = project_trace(project, n_steps=6)
    annotation = submit(project, trace, ana, {"FM-1.1": [1], "FM-3.2": [2]})
    proposal = ModeProposal.objects.create(
        project=project,
        trace=trace,
        author=ana,
        text="Calls the same tool again and again",
        suggested_name="loop",
    )

    page = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/pilot/proposals/")
    page.get_by_role("link", name="Draft a mode from these").click()
    drafted = page.locator("#changes").input_value()
    assert f"- {proposal.pk}" in drafted and "name: loop" in drafted
    page.fill(
        "#changes",
        CHANGES + f"- {{op: add, code: FM-2.7, name: Tool loop, definition: Same call again., category: FC2, "
        f"proposals: [{proposal.pk}]}}\n",
    )
    page.get_by_role("button", name="Preview").click()
    expect(page.locator('input[name="map:FM-3.2"]')).to_have_value("FM-3.2a, FM-3.2b")
    expect(page.locator('input[name="map:FM-1.1"]')).to_have_value("FM-1.1r")
    page.get_by_label("I checked this mapping").check()
    page.get_by_role("button", name="Move the project to v2").click()
    expect(page.get_by_text("The project now uses v2")).to_be_visible()
    assert set(
        LabelApplication.objects.filter(annotation=annotation).values_list("mode__code", flat=True)
    ) == {"FM-1.1r"}

    page = sign_in(browser, live_server, "ana")
    page.goto(f"{live_server.url}/p/pilot/")
    recheck = page.get_by_role("link", name=f"Re-check FM-2.7 on trace {trace.external_id}")
    expect(recheck).to_be_visible()
    recheck.click()
    expect(page.locator(".recheck")).to_contain_text("FM-3.2a")
    assert ModeRecheck.objects.filter(resolved_at__isnull=True).count() == 3
