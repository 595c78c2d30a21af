"""A step's HTML, written in Python (traces/step_html.py): hostile text in any field comes out as text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from traces.step_html import highlight, step_article, step_links
from traces.viewer import Segment, StepView

EVIL = "\"'><evil onmouseover=alert(1)>&amp;"
OUR_TAGS = {
    "li",
    "a",
    "span",
    "code",
    "article",
    "header",
    "time",
    "div",
    "pre",
    "details",
    "summary",
    "mark",
    "dl",
    "dt",
    "dd",
    "p",
}
OUR_ATTRIBUTES = {
    "id",
    "class",
    "href",
    "data-step",
    "data-goto-step",
    "style",
    "tabindex",
    "title",
    "aria-hidden",
    "hx-get",
    "hx-target",
    "hx-swap",
    "open",
    "data-n",
}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def _step(**overrides) -> StepView:
    values = {
        "index": 7,
        "parent_index": 3,
        "depth": 1,
        "agent": EVIL,
        "role": "x" + EVIL,
        "kind": "tool_result",
        "kind_label": "Tool result",
        "tool_name": EVIL,
        "tool_args": EVIL,
        "timestamp": "2025-01-01T10:11:12" + EVIL,
        "tokens": 12345,
        "duration_ms": 1500,
        "length": 40_000,
        "body": EVIL + "\nfind me",
        "mono": True,
        "is_json": False,
        "segments": [],
        "preview": EVIL,
        "truncated": True,
        "long": True,
        "head": EVIL,
        "line_count": 2,
        "hit": True,
        "marks": [EVIL],
    }
    return StepView(**{**values, **overrides})


@pytest.mark.parametrize(
    "step",
    [
        _step(),
        _step(long=False, truncated=False),
        _step(mono=False, long=False, segments=[Segment(False, EVIL), Segment(True, EVIL)]),
    ],
    ids=["long and truncated", "short", "prose with code"],
)
def test_every_field_of_a_step_comes_out_as_text(step):
    article = step_article(step, q="<evil", page_url="/p/x/a/1/" + EVIL, step_url="/p/x/t/2/steps/" + EVIL)
    link = step_links([step])
    for html in (article, link):
        assert "<evil" not in html
        assert "&lt;evil onmouseover=alert(1)&gt;" in html
        for tag, attributes in _tags(html):
            assert tag in OUR_TAGS, tag
            assert set(attributes) <= OUR_ATTRIBUTES, attributes
    # The hostile URL stays inside its attribute, whole.
    assert (
        "a",
        {"class": "permalink", "href": f"/p/x/a/1/{EVIL}?step=7#step-7", "title": "Link to this step"},
    ) in (_tags(article))


def test_a_long_truncated_step_links_to_its_whole_body_with_the_search_kept():
    article = step_article(_step(), q="a b&c", page_url="/p/x/a/1/", step_url="/p/x/t/2/steps/")
    load = next(attrs for tag, attrs in _tags(article) if attrs.get("hx-target") == "#step-7")
    assert load["href"] == "/p/x/t/2/steps/7/"
    assert load["hx-get"] == "/p/x/t/2/steps/7/?q=a%20b%26c"
    assert ("details", {"class": "more", "open": None}) in _tags(article)  # a hit opens its whole body


def test_a_step_shows_its_marks_parent_and_grouped_numbers():
    article = step_article(_step(marks=["FM-1.3 · ana"]), q="", page_url="/p/x/a/1/", step_url="/s/")
    assert '<span class="pill mark">FM-1.3 · ana</span>' in article
    assert 'data-goto-step="3"' in article and "↳ in #3" in article
    assert "12,345 tokens" in article and "1,500 ms" in article
    assert 'href="/p/x/a/1/?step=7#step-7"' in article
    assert "12,345 tok" in step_links([_step()])


def test_highlight_marks_every_match_whatever_its_case_and_escapes_the_rest():
    assert highlight("Find <me> and FIND", "find") == (
        '<mark class="hit">Find</mark> &lt;me&gt; and <mark class="hit">FIND</mark>'
    )
    assert highlight("a.b axb", ".") == 'a<mark class="hit">.</mark>b axb'  # the query is literal text
    assert highlight("<x>", "") == "&lt;x&gt;"
