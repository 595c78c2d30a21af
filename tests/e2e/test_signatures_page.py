"""The failure signatures page in Chromium: every chart renders, the htmx filter swaps the figures and
pushes the URL, a CSV downloads; the screenshot lands in var/screenshots/signatures.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from annotator.models import Membership, Project
from tests.factories import PASSWORD, UserFactory
from tests.signatures.showcase import build_showcase

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


@pytest.fixture
def showcase(settings):
    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="itbench", name="ITBench SRE study", taxonomy_version=resolve_version("mast")
    )
    owner = UserFactory(username="olivia")
    Membership.objects.create(project=project, user=owner, role="owner")
    build_showcase(project)
    return project


def test_the_signatures_page_renders_its_charts(browser, live_server, showcase):
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")

    url = f"{live_server.url}/p/itbench/signatures/?compare_a=baseline-run&compare_b=after-verifier-fix"
    page.goto(url)
    assert page.locator("h1").inner_text() == "ITBench SRE study \u203a Failure signatures"
    for section in (
        "#prevalence",
        "#benign-fatal",
        "#modes-per-trace",
        "#cooccurrence",
        "#positions",
        "#comparison",
    ):
        assert page.locator(section).is_visible(), section
    # Bars, heat cells, columns and the forest plot have real size on screen, not just markup.
    widest_bar = page.eval_on_selector_all(
        "#prevalence .hbar-fill", "els => Math.max(...els.map(e => e.getBoundingClientRect().width))"
    )
    assert widest_bar > 100
    assert page.locator("#prevalence .sig-heat td:not(.gap)").count() == 10 * (3 + 2 + 2)  # modes x groups
    tallest = page.eval_on_selector_all(
        "#positions .col", "els => Math.max(...els.map(e => e.getBoundingClientRect().height))"
    )
    assert tallest > 50
    assert page.locator("#comparison .forest-point").count() >= 5
    assert page.locator(".verdict-fatal").count() >= 1 and page.locator(".verdict-benign").count() >= 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "signatures.png"), full_page=True)
    page.screenshot(path=str(SCREENSHOTS / "signatures-top.png"))
    for section in (
        "prevalence",
        "benign-fatal",
        "modes-per-trace",
        "cooccurrence",
        "positions",
        "comparison",
    ):
        page.locator(f"#{section}").screenshot(path=str(SCREENSHOTS / f"signatures-{section}.png"))

    # The filter form swaps only the figures (htmx) and pushes the URL, so the view can be shared.
    before = page.locator(".sig-kpi b").first.inner_text()
    with page.expect_response(
        lambda r: "/signatures/" in r.url and r.request.headers.get("hx-request") == "true"
    ):
        page.select_option("select[name=model]", "llama-3-70b")
    page.wait_for_function(
        "before => document.querySelector('.sig-kpi b').textContent.trim() !== before", arg=before
    )
    assert "model=llama-3-70b" in page.url
    assert page.locator(".sig-kpi b").first.inner_text() == "80"
    assert page.locator("h1").count() == 1  # the partial, not a whole page inside the page

    with page.expect_download() as download:
        page.locator("#benign-fatal .sig-csv").click()
    assert download.value.suggested_filename == "itbench-benign_fatal-gold.csv"
    assert Path(download.value.path()).read_text().startswith("code,name,failed_with_mode")
    # Nothing labelled for a source: the page says what to do instead of drawing empty charts.
    page.goto(f"{live_server.url}/p/itbench/signatures/?source=agreed")
    assert "agreed labels need at least two annotators per trace" in page.locator(".sig-empty").inner_text()
    page.locator("#signatures-body").screenshot(path=str(SCREENSHOTS / "signatures-empty.png"))
    assert errors == []
    context.close()
