"""Template helpers for the annotation pages."""

from __future__ import annotations

import markdown as md
import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
    "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "kbd",
}  # fmt: skip


def render_markdown(text: str) -> SafeString:
    """Project guidelines: Markdown, then sanitised by nh3 (an allow-list), so an owner's paste of raw
    HTML cannot run script in annotators' browsers. Headings start at h2: the page owns h1."""
    if not text:
        return mark_safe("")
    html = md.markdown(text, extensions=["tables", "fenced_code", "sane_lists"])
    clean = nh3.clean(html, tags=_TAGS, attributes={"a": {"href", "title"}}, link_rel="noopener noreferrer")
    return mark_safe(clean)  # nh3 output is sanitised HTML


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    return render_markdown(text)


@register.filter
def duration(seconds: int | None) -> str:
    """Time spent, for people: "45 s", "3 min 20 s", "1 h 05 min"."""
    seconds = int(seconds or 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
