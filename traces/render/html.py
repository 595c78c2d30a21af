"""Blocks (traces.render.shapes) as HTML: every piece of trace text escaped, search hits marked.

Written in Python, not templates, for the reason traces/step_html.py gives (a step costs microseconds, not a
template render per line). One function per shape; their markup is this module's literals only, with every
value from a trace passed through `highlight` (which escapes) or `escape`. Pure: no Django.
"""

from __future__ import annotations

import re
from html import escape

from traces.render.shapes import Block, Code, DiffBlock, Fields, JsonBlock, size_label

# Control characters (but tab, newline and carriage return) and the bidirectional overrides that can make
# code read differently from what it does ("Trojan Source") are shown as visible marks, never passed through.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
# A block longer than this many lines is folded (<details>), its summary saying how long it is.
FOLD_LINES = 80


def highlight(text: str, query: str) -> str:
    """`text` escaped (control characters made visible), case-insensitive matches of `query` in <mark>."""
    text = str(text)
    if _CONTROLS.search(text):
        text = _CONTROLS.sub(_visible, text)
    if not query:
        return escape(text)
    out: list[str] = []
    last = 0
    for match in re.finditer(re.escape(query), text, re.I):
        out.append(escape(text[last : match.start()]))
        out.append(f'<mark class="hit">{escape(match.group(0))}</mark>')
        last = match.end()
    out.append(escape(text[last:]))
    return "".join(out)


def _visible(match: re.Match) -> str:
    char = ord(match.group(0))
    if char < 0x20:
        return chr(0x2400 + char)  # the Unicode "control picture": ␀, ␛, ...
    return "␡" if char == 0x7F else f"⟨U+{char:04X}⟩"


def blocks_html(blocks: list[Block], q: str = "", *, open_all: bool = False) -> str:
    """The blocks one after the other; folded ones open when they hold a search hit or `open_all`."""
    return "".join(_block(block, q, open_all) for block in blocks)


def _block(block: Block, q: str, open_all: bool) -> str:
    if isinstance(block, Fields):
        return fields_html(block, q)
    if isinstance(block, DiffBlock):
        return diff_html(block, q, open_all)
    if isinstance(block, Code):
        return code_html(block, q, open_all)
    return json_html(block, q, open_all)


def fields_html(block: Fields, q: str) -> str:
    rows = "".join(
        f"<dt>{highlight(key, '')}</dt><dd><code>{highlight(value, q)}</code></dd>"
        for key, value in block.items
    )
    return f'<dl class="shape shape-fields">{rows}</dl>'


def code_html(block: Code, q: str, open_all: bool = False) -> str:
    first = block.first_line
    lines = "\n".join(
        f'<span class="l" data-n="{first + n}">{highlight(line, q)}</span>'
        for n, line in enumerate(block.lines)
    )
    meta = f"{_lines(len(block.lines), block.cut)} · {size_label(block.total_chars)}"
    body = f'<pre class="mono code-lines">{lines}</pre>'
    return _frame("code", block.label, meta, body, block.cut, len(block.lines), q, open_all)


def diff_html(block: DiffBlock, q: str, open_all: bool = False) -> str:
    diff = block.diff
    rows = "\n".join(f'<span class="d {tag}">{highlight(text, q)}</span>' for tag, text in diff.rows)
    meta = f"diff · {diff.added:,} added, {diff.removed:,} removed"
    body = f'<pre class="mono diff-lines">{rows}</pre>'
    return _frame("diff", block.label, meta, body, diff.cut, len(diff.rows), q, open_all)


def json_html(block: JsonBlock, q: str, open_all: bool = False) -> str:
    text = highlight("\n".join(block.lines), q)
    meta = f"JSON · {_lines(len(block.lines), block.cut)} · {size_label(block.total_chars)}"
    body = f'<pre class="mono json">{text}</pre>'
    return _frame("json", block.label, meta, body, block.cut, len(block.lines), q, open_all)


def _frame(shape: str, label: str, meta: str, body: str, cut: str, lines: int, q: str, open_all: bool) -> str:
    head = (f'<span class="shape-label">{highlight(label, "")}</span> ' if label else "") + (
        f'<span class="shape-meta">{escape(meta)}</span>'
    )
    note = f'<p class="shape-cut">Cut: {escape(cut)}.</p>' if cut else ""
    if lines <= FOLD_LINES:
        return f'<div class="shape shape-{shape}"><div class="shape-head">{head}</div>{body}{note}</div>'
    opened = " open" if open_all or (q and '<mark class="hit">' in body) else ""
    return (
        f'<details class="shape shape-{shape} folded"{opened}><summary class="shape-head">{head}'
        f' <span class="shape-fold">(folded: show all)</span></summary>{body}{note}</details>'
    )


def _lines(count: int, cut: str) -> str:
    return f"{count:,} line{'s' if count != 1 else ''}{' shown' if cut else ''}"
