"""Diffs for the viewer: an edit's old and new text, or a patch (unified, git or Codex's `*** Begin Patch`),
as rows of (tag, text) ready to print. Pure, and bounded: at most MAX_ROWS rows come out, and difflib never
compares more than MAX_COMPARE lines a side (it is quadratic at worst), whatever the size of the input.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

# Tags: "add" / "del" (changed lines), "ctx" (unchanged), "hunk" (an @@ line or a gap), "file" (a header).
MAX_ROWS = 600
MAX_COMPARE = 800
# An edit smaller than this (old + new lines) is shown whole; a larger one as hunks with this much context.
WHOLE_EDIT_LINES = 200
CONTEXT = 3
SCAN_CHARS = 20_000
_UNIFIED = re.compile(r"^--- [^\n]*\n\+\+\+ [^\n]*\n@@ ", re.M)
_GIT = re.compile(r"^diff --git ", re.M)
_CODEX = re.compile(r"^\*\*\* Begin Patch", re.M)


@dataclass(frozen=True)
class Diff:
    rows: list[tuple[str, str]]
    added: int
    removed: int
    cut: str = ""  # what was left out, said in words; empty when nothing was


def patch_start(text: str) -> int:
    """Where a patch begins in `text` (looking only at its first SCAN_CHARS), or -1 if there is none."""
    head = text[:SCAN_CHARS]
    if "--- " not in head and "diff --git " not in head and "*** Begin Patch" not in head:
        return -1  # most text: no need to try the patterns at every line start
    stripped = head.lstrip()
    if stripped.startswith("*** Begin Patch"):
        return len(head) - len(stripped)
    found = (_CODEX.search(head), _GIT.search(head), _UNIFIED.search(head))
    starts = [m.start() for m in found if m is not None]
    return min(starts) if starts else -1


def is_patch(text: str) -> bool:
    """`text` is a patch from its first line on (not prose that contains one)."""
    head = text[:SCAN_CHARS]
    start = patch_start(head)
    return start >= 0 and start == len(head) - len(head.lstrip())


def parse_patch(text: str, *, max_rows: int = MAX_ROWS) -> Diff:
    """A unified / git / Codex patch as rows; reads at most `max_rows` lines of it."""
    rows: list[tuple[str, str]] = []
    added = removed = 0
    lines = _first_lines(text, max_rows)
    for i, line in enumerate(lines):
        if _is_header(line, lines[i + 1] if i + 1 < len(lines) else "", rows[-1] if rows else None):
            tag = "file"
        elif line.startswith("@@"):
            tag = "hunk"
        elif line.startswith("+"):
            tag = "add"
        elif line.startswith("-"):
            tag = "del"
        else:
            tag = "ctx"
        if tag == "add":
            added += 1
        elif tag == "del":
            removed += 1
        rows.append((tag, line))
    cut = ""
    if _lines_at_least(text, len(rows) + 1) > len(rows):
        cut = f"the first {len(rows):,} of {_line_count(text)} lines shown"
    return Diff(rows=rows, added=added, removed=removed, cut=cut)


def _is_header(line: str, following: str, previous: tuple[str, str] | None) -> bool:
    if line.startswith(("*** ", "diff --git ", "index ", "new file mode", "deleted file mode")):
        return True  # "*** ": Codex's *** Begin Patch / *** Update File: x / *** End Patch
    if line.startswith("--- ") and following.startswith("+++ "):
        return True
    return line.startswith("+++ ") and previous is not None and previous[1].startswith("--- ")


def edit_diff(old: str, new: str, *, max_rows: int = MAX_ROWS) -> Diff:
    """The lines `old` -> `new` changed: the whole edit when small, else its hunks with CONTEXT lines."""
    a = _first_lines(old, MAX_COMPARE)
    b = _first_lines(new, MAX_COMPARE)
    notes = []
    if len(a) == MAX_COMPARE and _lines_at_least(old, MAX_COMPARE + 1) > MAX_COMPARE:
        notes.append(f"only the first {MAX_COMPARE:,} lines of the old text compared")
    if len(b) == MAX_COMPARE and _lines_at_least(new, MAX_COMPARE + 1) > MAX_COMPARE:
        notes.append(f"only the first {MAX_COMPARE:,} lines of the new text compared")
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if len(a) + len(b) <= WHOLE_EDIT_LINES:
        groups = [matcher.get_opcodes()]
    else:
        groups = list(matcher.get_grouped_opcodes(CONTEXT))
    rows: list[tuple[str, str]] = []
    added = removed = 0
    for group in groups:
        if len(groups) > 1 or len(a) + len(b) > WHOLE_EDIT_LINES:
            first = group[0]
            rows.append(("hunk", f"@@ -{first[1] + 1} +{first[3] + 1} @@"))
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                rows.extend(("ctx", " " + line) for line in a[i1:i2])
                continue
            if op in ("replace", "delete"):
                rows.extend(("del", "-" + line) for line in a[i1:i2])
                removed += i2 - i1
            if op in ("replace", "insert"):
                rows.extend(("add", "+" + line) for line in b[j1:j2])
                added += j2 - j1
    if len(rows) > max_rows:
        notes.append(f"the first {max_rows:,} of {len(rows):,} diff lines shown")
        rows = rows[:max_rows]
    return Diff(rows=rows, added=added, removed=removed, cut="; ".join(notes))


def _first_lines(text: str, n: int) -> list[str]:
    """The first `n` lines of `text`, reading no more of it than those lines (plus one line's worth)."""
    lines: list[str] = []
    start = 0
    while len(lines) < n and start <= len(text):
        end = text.find("\n", start)
        if end == -1:
            if start < len(text):
                lines.append(text[start:])
            break
        lines.append(text[start:end])
        start = end + 1
    return lines


def _lines_at_least(text: str, n: int) -> int:
    """The number of lines in `text`, counted no further than `n` (enough to say whether lines were cut)."""
    count, start = 0, 0
    while count < n:
        end = text.find("\n", start)
        if end == -1:
            return count + (1 if start < len(text) else 0)
        count, start = count + 1, end + 1
    return count


def _line_count(text: str) -> str:
    """The line count as words: exact up to a million characters, else 'more than N'."""
    if len(text) <= 1_000_000:
        return f"{text.count(chr(10)) + (0 if text.endswith(chr(10)) else 1):,}"
    return f"more than {text.count(chr(10), 0, 1_000_000):,}"
