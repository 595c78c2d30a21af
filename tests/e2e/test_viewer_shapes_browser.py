"""A coder opens a SWE-agent run in Chromium and reads its edit as a diff (added and removed lines marked),
its script as numbered code, with the run's markup shown as text."""

from __future__ import annotations

import pytest

from tests.e2e.pages import signed_in
from tests.render.conftest import swe_world  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_edit_reads_as_a_diff_in_the_browser(browser, live_server, swe_world):  # noqa: F811
    from playwright.sync_api import expect

    project, _trace, slot = swe_world
    page, errors = signed_in(browser, live_server, slot.annotator)
    page.goto(f"{live_server.url}/p/{project.slug}/a/{slot.pk}/")
    edit = page.locator("#step-1 .shape-diff")
    expect(edit).to_be_visible()
    expect(edit.locator(".shape-label")).to_have_text("/testbed/calc.py")
    expect(edit.locator(".d.del")).to_have_text(["-    return a - b"])
    expect(edit.locator(".d.add")).to_have_text(["+    return a + b"])
    # Added and removed lines look different (their own backgrounds), not just a sign.
    added = edit.locator(".d.add").evaluate("e => getComputedStyle(e).backgroundColor")
    removed = edit.locator(".d.del").evaluate("e => getComputedStyle(e).backgroundColor")
    assert added != removed and "rgba(0, 0, 0, 0)" not in (added, removed)
    script = page.locator("#step-4 .shape-code")
    expect(script.locator(".l")).to_have_count(5)
    number = script.locator(".l").nth(2).evaluate("e => getComputedStyle(e, '::before').content")
    assert number == '"3"'
    expect(script.locator(".l").nth(3)).to_contain_text("<script>alert(1)</script></pre>")
    expect(page.locator("#step-8 .shape-diff .d.add")).to_have_text(["+    return a + b"])
    assert page.locator("script", has_text="alert(1)").count() == 0
    assert errors == []
