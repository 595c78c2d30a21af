"""One navigation: the project page groups its pages by the loop's steps and offers each member only what
opens for them; the top bar shows annotators no "Traces" link that would answer 403."""

from __future__ import annotations

import pytest

from annotator.access import ProjectAccess
from annotator.navigation import PROJECT_STEPS, project_nav
from annotator.services.assignment import do_assign
from tests.factories import BatchFactory, UserFactory, add_member, trace_with_steps

pytestmark = pytest.mark.django_db


def _labels(nav) -> dict[str, list[str]]:
    return {step["label"]: [link["label"] for link in step["links"]] for step in nav}


def test_the_steps_follow_the_loop():
    assert [step.key for step in PROJECT_STEPS] == [
        "import",
        "label",
        "agree",
        "adjudicate",
        "analyse",
        "publish",
    ]


def test_an_owner_sees_every_step(owner, project):
    nav = project_nav(ProjectAccess.load(owner, project.slug))
    assert [step["key"] for step in nav] == ["import", "label", "agree", "adjudicate", "analyse", "publish"]


def test_every_offered_link_opens_for_its_member(client, owner, annotator_a, adjudicator, project):
    viewer = UserFactory(username="vera-viewer")
    add_member(project, viewer, "viewer")
    for user in (owner, annotator_a, adjudicator, viewer):
        client.force_login(user)
        for step in project_nav(ProjectAccess.load(user, project.slug)):
            for link in step["links"]:
                if not link["blocked"]:
                    assert client.get(link["url"]).status_code == 200, (user.username, link["url"])


def test_an_annotator_is_offered_only_their_own_pages(annotator_a, project):
    labels = _labels(project_nav(ProjectAccess.load(annotator_a, project.slug)))
    assert "Import" not in labels and "Adjudicate" not in labels and "Publish" not in labels
    assert "My assignments" in labels["Label"]
    assert all("Agreement report" not in links for links in labels.values())


def test_a_blind_owner_sees_report_pages_greyed_with_why(owner, project):
    batch = BatchFactory()
    trace_with_steps(2, batch=batch)
    project.batches.add(batch)
    add_member(project, owner, "annotator")
    do_assign(project)
    nav = project_nav(ProjectAccess.load(owner, project.slug))
    links = {link["label"]: link for step in nav for link in step["links"]}
    assert links["Export dataset"]["blocked"] and "blind" in links["Export dataset"]["title"]
    assert not links["Import traces"]["blocked"]


def test_the_project_page_renders_the_grouped_navigation(client, owner, project):
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/").content.decode()
    assert 'class="loop"' in html
    assert html.index("1. Import") < html.index("2. Label") < html.index("6. Publish")


def test_the_top_bar_shows_annotators_no_traces_link(client, annotator_a, project):
    client.force_login(annotator_a)
    html = client.get("/").content.decode()
    assert 'href="/traces/"' not in html
    assert client.get("/traces/").status_code == 403  # what the link would have answered


def test_the_top_bar_shows_staff_the_traces_link(client, project):
    staff = UserFactory(username="sam-staff", is_staff=True)
    client.force_login(staff)
    html = client.get("/").content.decode()
    assert 'href="/traces/"' in html


def test_every_page_links_a_favicon_and_a_skip_link(client, owner, project):
    client.force_login(owner)
    html = client.get(f"/p/{project.slug}/").content.decode()
    assert 'rel="icon"' in html and "favicon.svg" in html
    assert 'class="skip-link" href="#main"' in html and 'id="main"' in html
