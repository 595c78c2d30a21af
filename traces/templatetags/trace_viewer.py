"""Template filters for the trace viewer. Trace text is untrusted: every piece is escaped here before any
markup is added, so the result may be marked safe."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def highlight(text: str, query: str) -> SafeString:
    """Escape `text` and wrap case-insensitive matches of `query` in <mark>."""
    text = str(text)
    if not query:
        return escape(text)
    pattern = re.compile(re.escape(query), re.I)
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(escape(text[last : match.start()]))
        out.append(f'<mark class="hit">{escape(match.group(0))}</mark>')
        last = match.end()
    out.append(escape(text[last:]))
    # Safe: every fragment of trace text above went through escape(); only our own tags are added.
    return mark_safe("".join(out))
