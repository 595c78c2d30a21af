"""In Chromium at 1024 px and 1440 px: the project page, the annotation page and the adjudication page draw
nothing over anything else (checked through element boxes, tests/e2e/layout.py), the adjudication page leaves
the step text room to read, and its "Save and next" bar covers none of the decision's controls."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from annotator.models import Assignment, Membership, Project
from annotator.services.adjudication import do_check_trace
from annotator.services.assignment import do_assign
from tests.e2e.layout import overlaps, unreachable, width_of
from tests.factories import PASSWORD, UserFactory
from tests.labels import submit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDTHS = (1024, 1440)
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def world(tmp_path):
    """A MAST project with three generated traces for two annotators, who disagree on the first."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.importers.synthetic import native_lines, synthetic_traces
    from traces.services import do_import_files

    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="pilot", name="Pilot study of a long project name", taxonomy_version=resolve_version("mast")
    )
    users = {name: UserFactory(username=name) for name in ("olivia", "ana", "ben", "ada")}
    for name, role in (
        ("olivia", "owner"),
        ("ana", "annotator"),
        ("ben", "annotator"),
        ("ada", "adjudicator"),
    ):
        Membership.objects.create(project=project, user=users[name], role=role)
    path = tmp_path / "three.jsonl"
    path.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(3, steps=16, seed=5))))
    result = do_import_files([(path, path.name)], batch_name="pilot-1", keep_annotations=False)
    project.batches.add(result.batch)
    do_assign(project)
    first = result.batch.traces.order_by("pk").first()
    submit(project, first, users["ana"], {"FM-1.1": [2], "FM-2.3": [5]})
    submit(project, first, users["ben"], {"FM-1.1": [2], "FM-3.2": [7]})
    item = do_check_trace(project.pk, first.pk)
    assert item is not None and item.status == "open"
    todo = Assignment.objects.filter(project=project, annotator=users["ana"], status="pending").first()
    return project, item, todo, users


def signed_in(browser, live_server, username: str, width: int):
    page = browser.new_context(viewport={"width": width, "height": 800}).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page


@pytest.mark.parametrize("width", WIDTHS)
def test_the_project_page_overlaps_nothing(browser, live_server, world, width):
    from playwright.sync_api import expect

    project, _, _, _ = world
    page = signed_in(browser, live_server, "olivia", width)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    expect(page.locator("#progress-annotators")).to_be_visible()
    assert overlaps(page) == []
    page.locator("#progress").scroll_into_view_if_needed()
    assert overlaps(page) == []
    shot(page, f"layout-project-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_annotation_page_overlaps_nothing(browser, live_server, world, width):
    from playwright.sync_api import expect

    project, _, todo, _ = world
    page = signed_in(browser, live_server, "ana", width)
    page.goto(f"{live_server.url}/p/{project.slug}/a/{todo.pk}/")
    expect(page.locator("#label-form")).to_be_visible()
    assert overlaps(page) == []
    assert width_of(page, ".step-bodies") >= 300
    assert unreachable(page, ".wb-panel") == []
    shot(page, f"layout-annotate-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_adjudication_page_leaves_room_and_its_bar_covers_no_control(browser, live_server, world, width):
    from playwright.sync_api import expect

    project, item, _, _ = world
    page = signed_in(browser, live_server, "ada", width)
    page.goto(f"{live_server.url}/p/{project.slug}/adjudication/{item.pk}/")
    claim = page.get_by_role("button", name="Claim it")
    if claim.count():
        claim.click()
    expect(page.locator("#decision-form")).to_be_visible()
    assert overlaps(page) == []
    # The step text gets a readable column (it was about 150 px at 1024 px).
    assert width_of(page, ".step-bodies") >= 380
    # Every control of the decision comes out from under the "Save and next" bar when scrolled to.
    assert unreachable(page, ".adjudicate-panel") == []
    assert overlaps(page) == []
    page.locator(".adjudicate-panel").evaluate("p => { p.scrollTop = 0; }")
    shot(page, f"layout-adjudication-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_signatures_heatmap_fits_or_scrolls_inside_its_card(browser, live_server, width, monkeypatch):
    """Fourteen models of four traces each: a heatmap wider than the page, every rate from a few traces."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from tests.signatures import showcase

    models = {f"model-{i:02d}-with-a-long-name": 0.3 + 0.04 * i for i in range(13)} | {"llama-3-70b": 0.7}
    monkeypatch.setattr(showcase, "MODELS", models)
    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="itbench", name="ITBench SRE study", taxonomy_version=resolve_version("mast")
    )
    Membership.objects.create(project=project, user=UserFactory(username="olivia"), role="owner")
    showcase.build_showcase(project, n_per_batch_model=2)
    page = signed_in(browser, live_server, "olivia", width)
    page.goto(f"{live_server.url}/p/itbench/signatures/")
    card = page.locator("#prevalence").bounding_box()
    heat = page.locator("#prevalence .sig-scroll").first.bounding_box()
    assert card["x"] + card["width"] <= width
    assert heat["x"] + heat["width"] <= card["x"] + card["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # The mode names stay in view while the heatmap scrolls sideways.
    page.locator("#prevalence .sig-scroll").first.evaluate("s => { s.scrollLeft = s.scrollWidth; }")
    name = page.locator("#prevalence .sig-heat tbody th").first.bounding_box()
    assert name["x"] >= heat["x"] - 1
    # A rate from four traces is drawn pale and says so, never a dark "100%".
    faint = page.locator("#prevalence .sig-heat td.faint")
    assert faint.count() > 0
    assert "n = 4" in faint.first.inner_text()
    assert page.locator("#prevalence .sig-heat td.faint.dark").count() == 0
    shot(page, f"layout-signatures-{width}")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", ["members/", "rounds/", "llm/", "mine/"])
def test_the_form_pages_overlap_nothing(browser, live_server, world, width, path):
    """The invite, round and LLM forms (and an annotator's own list) fit their fields at any width."""
    project, _, _, _ = world
    page = signed_in(browser, live_server, "ana" if path == "mine/" else "olivia", width)
    page.goto(f"{live_server.url}/p/{project.slug}/{path}")
    assert page.locator("h1").is_visible()
    assert overlaps(page) == []
    for select in page.locator("main select").all():
        box, parent = (
            select.bounding_box(),
            select.evaluate("s => s.parentElement.getBoundingClientRect().right"),
        )
        if box:
            assert box["x"] + box["width"] <= parent + 1, "a select overflows its field"
    shot(page, f"layout-{path.strip('/')}-{width}")


def test_keys_set_confidence_ambiguous_and_the_note(browser, live_server, world):
    """c then a digit sets the confidence, a marks the trace ambiguous, o goes to the note; the panel
    says so beside each field."""
    from playwright.sync_api import expect

    project, _, todo, _ = world
    page = signed_in(browser, live_server, "ana", 1440)
    page.goto(f"{live_server.url}/p/{project.slug}/a/{todo.pk}/")
    expect(page.locator("#label-form")).to_be_visible()
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("c")
    page.keyboard.press("4")
    expect(page.locator('input[name="confidence"][value="4"]')).to_be_checked()
    page.keyboard.press("a")
    expect(page.locator('input[name="ambiguous"]')).to_be_checked()
    page.keyboard.press("o")
    expect(page.locator("#trace-note")).to_be_focused()
    page.keyboard.type("Two readings of step 3.")
    page.keyboard.press("Escape")
    expect(page.locator("#trace-note")).to_have_value("Two readings of step 3.")
    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_contain_text("Confidence 1 to 5")


def test_keyboard_users_get_a_skip_link_and_a_visible_focus_ring(browser, live_server, world):
    from playwright.sync_api import expect

    page = signed_in(browser, live_server, "olivia", 1024)
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    expect(skip).to_be_focused()
    assert skip.bounding_box()["y"] >= 0  # on screen once focused
    page.keyboard.press("Tab")
    brand = page.locator(".topbar .brand")
    expect(brand).to_be_focused()
    outline = brand.evaluate("e => getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).outlineWidth")
    assert not outline.startswith("none") and not outline.endswith(" 0px")
    skip.focus()
    page.keyboard.press("Enter")
    expect(page.locator("main#main")).to_be_focused()
