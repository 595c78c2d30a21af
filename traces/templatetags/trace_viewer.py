"""Template tags for the trace viewer: a page's steps, written by traces.step_html (which escapes every piece
of trace text before adding markup)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from traces import step_html
from traces.viewer import StepView

register = template.Library()


@register.simple_tag
def step_links(steps: list[StepView]) -> SafeString:
    """The index entries of a page's steps."""
    return step_html.step_links(steps)


@register.simple_tag
def step_articles(steps: list[StepView], *, q: str = "", page_url: str, step_url: str) -> SafeString:
    """The articles of a page's steps."""
    return step_html.step_articles(steps, q=q or "", page_url=page_url, step_url=step_url)


@register.simple_tag
def step_article(
    step: StepView, *, q: str = "", page_url: str, step_url: str, full: bool = False
) -> SafeString:
    """One step's article: the swap target #step-N."""
    return step_html.step_article(step, q=q or "", page_url=page_url, step_url=step_url, full=bool(full))
