"""The HTML of a step: its entry in the page's index and its article, written here rather than in a template.

Why Python: a page shows 50 steps and every one was about 60 template variables, tags and includes. Django's
template engine spent 0.25-0.35 ms on each step (a lookup, a localisation and an escape per variable), which
made a 50-step page cost half as much again as a 20-step one (`bench/bench_viewer.py`, issue 14). Written
out, a step costs a few dozen microseconds. The templates keep the page around the steps, and
`templates/traces/partials/_step.html` stays the swap target of one step (it calls `step_article`).

Safety: trace text is hostile. Every value from a step goes through `_e` (html.escape, quotes included)
or `highlight` (which escapes before adding its own <mark> tags) before it meets markup; the only unescaped
text is this module's own literals. Tool arguments, and bodies with a shape (a SWE-agent edit command, a
script, an output holding a patch), are written by traces.render (diffs, numbered code, folded JSON) under the
same rule and with bounded work per step. `tests/annotate/test_step_html.py` and `tests/render/` render steps
whose every field is markup and check that none of it comes out live.
"""

from __future__ import annotations

from html import escape as _e
from urllib.parse import quote

from django.utils.safestring import SafeString, mark_safe

from traces.render import argument_blocks, blocks_html, call_text_blocks, highlight, output_blocks
from traces.viewer import StepView

__all__ = ["highlight", "step_article", "step_articles", "step_links"]


def step_links(steps: list[StepView]) -> SafeString:
    """The index entries (<li>) of a page's steps."""
    return mark_safe("".join(_link(step) for step in steps))


def step_articles(steps: list[StepView], *, q: str, page_url: str, step_url: str) -> SafeString:
    """The articles of a page's steps, search hits marked."""
    return mark_safe("".join(_article(step, q, page_url, step_url, full=False) for step in steps))


def step_article(step: StepView, *, q: str, page_url: str, step_url: str, full: bool = False) -> SafeString:
    """One step's article (swap target ``#step-N``); `full`: its whole body is shown open."""
    return mark_safe(_article(step, q, page_url, step_url, full=full))


def _classes(step: StepView) -> str:
    return f"kind-{_e(step.kind)}{' is-hit' if step.hit else ''}{' is-marked' if step.marks else ''}"


def _link(step: StepView) -> str:
    ref = step.ref
    meta = ""
    if step.tokens or step.timestamp or step.duration_ms:
        meta = (
            '<span class="sl-meta">'
            + (_e(step.timestamp[11:19]) if step.timestamp else "")
            + (f" · {step.duration_text} ms" if step.duration_ms else "")
            + (f" · {step.tokens_text} tok" if step.tokens else "")
            + "</span>"
        )
    tool = f'<code class="tool">{_e(step.tool_name)}</code>' if step.tool_name else ""
    return (
        f'<li><a class="step-link {_classes(step)}" href="#step-{ref}" data-step="{ref}"'
        f' style="--depth: {step.depth_ref}">'
        f'<span class="sl-top"><span class="idx">{ref}</span>'
        f'<span class="agent">{_e(step.agent or step.role or "—")}</span>'
        f'<span class="kind-badge kind-{_e(step.kind)}">{_e(step.kind_label)}</span>{tool}</span>'
        f'<span class="preview">{_e(step.preview)}</span>{meta}</a></li>'
    )


def _article(step: StepView, q: str, page_url: str, step_url: str, *, full: bool) -> str:
    ref = step.ref
    parts = [
        f'<article id="step-{ref}" class="step {_classes(step)}" data-step="{ref}" tabindex="-1"'
        f' style="--depth: {step.depth_ref}">'
        '<header class="step-head">'
        f'<a class="permalink" href="{_e(page_url)}?step={ref}#step-{ref}" title="Link to this step">#{ref}</a>'
        f' <span class="agent">{_e(step.agent or "—")}</span>'
    ]
    if step.role and step.role != step.agent:
        parts.append(f'<span class="muted small">{_e(step.role)}</span>')
    parts.append(f' <span class="kind-badge kind-{_e(step.kind)}">{_e(step.kind_label)}</span>')
    if step.tool_name:
        parts.append(f' <code class="tool">{_e(step.tool_name)}</code>')
    if step.parent_index is not None:
        parent = step.parent_ref
        parts.append(
            f' <a class="muted small" href="#step-{parent}" data-goto-step="{parent}">↳ in #{parent}</a>'
        )
    parts.append(' <span class="step-meta">')
    if step.timestamp:
        parts.append(f"<time>{_e(step.timestamp)}</time>")
    if step.duration_ms:
        parts.append(f" · {step.duration_text} ms")
    if step.tokens:
        parts.append(f" · {step.tokens_text} tokens")
    parts.append('</span> <span class="pinned-mark" aria-hidden="true"></span>')
    parts.extend(f'<span class="pill mark">{_e(mark)}</span>' for mark in step.marks)
    parts.append("</header>")
    if step.tool_args not in (None, "", {}, []):
        parts.append(
            '<div class="tool-args"><span class="label">Arguments</span>'
            f"{blocks_html(argument_blocks(step.tool_args), q, open_all=full)}</div>"
        )
    shaped = _shaped_body(step)
    if shaped:
        parts.append(f'<div class="body shaped">{blocks_html(shaped, q, open_all=full)}</div>')
    elif step.long:
        kind = "mono" if step.mono else "prose"
        opened = " open" if step.hit or full else ""
        parts.append(
            f'<div class="body-long"><pre class="head {kind}">{highlight(step.head, q)}</pre>'
            f'<details class="more"{opened}><summary>Show all {step.line_count:,} lines'
            f" ({_e(step.size_label)})</summary>{_body(step, q)}</details></div>"
        )
    elif step.body:  # a tool call with only arguments has no body: no empty box under them
        parts.append(_body(step, q))
    if step.truncated:
        url = f"{_e(step_url)}{ref}/"
        query = f"?q={_e(quote(q, safe='/'))}" if q else ""
        parts.append(
            f'<a class="button small" href="{url}" hx-get="{url}{query}" hx-target="#step-{ref}"'
            f' hx-swap="outerHTML">Load the whole step ({_e(step.size_label)})</a>'
        )
    parts.append("</article>")
    return "".join(parts)


def _shaped_body(step: StepView) -> list:
    """A body with a shape: a command line that edits or scripts (SWE-agent keeps its action as the call's
    text; a call with arguments has prose here, its thought), or an output holding a patch."""
    if step.is_json:
        return []
    if step.kind == "tool_call" and step.tool_args in (None, "", {}, []):
        return call_text_blocks(step.body)
    if step.kind in ("tool_result", "observation", "error"):
        return output_blocks(step.body)
    return []


def _body(step: StepView, q: str) -> str:
    if step.mono:
        json_class = " json" if step.is_json else ""
        return f'<pre class="body mono{json_class}">{highlight(step.body, q)}</pre>'
    segments = "".join(
        f'<pre class="mono">{highlight(segment.text, q)}</pre>'
        if segment.code
        else f'<div class="text">{highlight(segment.text, q)}</div>'
        for segment in step.segments
    )
    return f'<div class="body prose">{segments}</div>'
