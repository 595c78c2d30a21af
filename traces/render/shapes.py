"""What a tool call's arguments (or a step's text) look like, as blocks to show: code, a diff, JSON, fields.

Agents put code and files in their tool calls (SWE-agent's `str_replace_editor`, OpenHands' edits and
`execute_bash` scripts, Codex's `apply_patch` and shell calls). Shown as one JSON string they read as `\\n`
soup; shown by shape they read as code. Detection is by the value's shape, not by tool name, so an agent
this module never heard of still gets its old/new pair shown as a diff.

Bounded: a block keeps at most MAX_LINES lines / MAX_CHARS characters and says what it left out; a step
gets at most MAX_BLOCKS blocks; strings longer than PARSE_CHARS are never parsed (JSON, shell words), only
cut. So a 10 MB argument costs what a 50 KB one does. Pure: no Django, no HTML (see traces.render.html).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from traces.render.diff import Diff, edit_diff, is_patch, parse_patch, patch_start

MAX_LINES = 500
MAX_CHARS = 50_000
MAX_BLOCKS = 12
MAX_FIELD_CHARS = 300
MAX_DEPTH = 40  # deeper JSON is shown as "…" (a hostile value nested thousands deep must not recurse)
PARSE_CHARS = 200_000
SHELL_CHARS = 50_000  # shlex reads a few MB a second: a longer command line is shown as code, not parsed
ARGV_WORDS = 50
# Old/new key pairs that mean "an edit" (SWE-agent / OpenHands, Claude Code, others).
EDIT_KEYS = (("old_str", "new_str"), ("old_string", "new_string"), ("old_text", "new_text"))
# Keys naming the file an edit or a code block belongs to, in the order they are tried.
PATH_KEYS = ("path", "file_path", "filename", "file")
_SWE_EDIT = re.compile(r"\Aedit (\d+):(\d+)\n(.*?)\n?end_of_edit\s*\Z", re.S)


@dataclass(frozen=True)
class Code:
    label: str
    lines: list[str]
    total_chars: int
    first_line: int = 1
    cut: str = ""


@dataclass(frozen=True)
class DiffBlock:
    label: str
    diff: Diff
    total_chars: int


@dataclass(frozen=True)
class JsonBlock:
    label: str
    lines: list[str]
    total_chars: int  # of the value's compact JSON, as far as it was measured
    cut: str = ""


@dataclass(frozen=True)
class Fields:
    items: list[tuple[str, str]] = field(default_factory=list)


Block = Code | DiffBlock | JsonBlock | Fields


def argument_blocks(value: Any) -> list[Block]:
    """Blocks for a tool call's arguments (a JSON value: usually an object, sometimes a string)."""
    if value is None or value == "" or value == {} or value == []:
        return []
    if isinstance(value, str):
        parsed = _json_text(value)
        if parsed is not None:
            return argument_blocks(parsed)
        return _string_blocks("", value) or [code_block("", value)]
    if isinstance(value, dict):
        return _object_blocks(value)
    return [json_block("", value)]


def call_text_blocks(text: str) -> list[Block]:
    """Blocks for a tool call written as a command line (SWE-agent keeps its action as the step's text):
    an edit command becomes a diff, a patch a diff, a script numbered code; one plain line gives none."""
    if len(text) <= SHELL_CHARS and text.startswith(("str_replace_editor ", "edit_file ")):
        args = _command_args(text)
        blocks = _object_blocks(args) if args is not None else []
        if any(isinstance(b, Code | DiffBlock) for b in blocks):
            return blocks
    if len(text) <= SHELL_CHARS and text.startswith("edit ") and not _SWE_EDIT.match(text):
        # SWE-agent 1.x's `edit SEARCH REPLACE [REPLACE_ALL]`: a search-and-replace, so a diff.
        words = _shell_words(text)
        if words is not None and len(words) in (3, 4):
            return [DiffBlock("", edit_diff(words[1], words[2]), len(text))]
    edit = _SWE_EDIT.match(text) if len(text) <= PARSE_CHARS else None
    if edit is not None:
        first, last, new = int(edit.group(1)), edit.group(2), edit.group(3)
        return [
            Fields([("edit", f"replace lines {first}-{last} with")]),
            code_block("", new, first_line=first),
        ]
    return _string_blocks("", text)


def output_blocks(text: str) -> list[Block]:
    """Blocks for a tool's output when it holds a patch (git diff, a submission); none otherwise."""
    start = patch_start(text)
    if start < 0:
        return []
    blocks: list[Block] = []
    if text[:start].strip():
        blocks.append(code_block("", text[:start].rstrip("\n")))
    blocks.append(DiffBlock("", parse_patch(text[start:] if start else text), len(text) - start))
    return blocks


def code_block(label: str, text: str, *, first_line: int = 1) -> Code:
    lines, cut = _cut_lines(text)
    return Code(label, lines, len(text), first_line, cut)


def json_block(label: str, value: Any) -> JsonBlock:
    text, cut = bounded_json(value, MAX_CHARS)
    lines = text.split("\n")
    notes = [cut] if cut else []
    if len(lines) > MAX_LINES:
        notes.insert(0, f"the first {MAX_LINES:,} of {len(lines):,} lines shown")
        lines = lines[:MAX_LINES]
    return JsonBlock(label, lines, len(text), "; ".join(notes))


def bounded_json(value: Any, budget: int) -> tuple[str, str]:
    """`value` as indented JSON, at most about `budget` characters: (text, what was cut, in words or "").
    Walks the value and stops when the budget is spent, so a huge value costs no more than a small one;
    values nested deeper than MAX_DEPTH are shown as "…" rather than recursed into."""
    out: list[str] = []
    spent = 0
    cut: set[str] = set()

    def emit(piece: str) -> bool:
        nonlocal spent
        if spent >= budget:
            cut.add(f"only the first {budget:,} characters shown")
            return False
        out.append(piece)
        spent += len(piece)
        return True

    def walk(node: Any, indent: str) -> bool:
        if len(indent) > 2 * MAX_DEPTH and isinstance(node, dict | list | tuple) and node:
            cut.add(f"values nested more than {MAX_DEPTH} levels deep shown as …")
            return emit('"…"')
        if isinstance(node, dict):
            if not node:
                return emit("{}")
            emit("{")
            inner = indent + "  "
            for n, (key, item) in enumerate(node.items()):
                comma = "," if n else ""
                if not emit(f"{comma}\n{inner}{_scalar(str(key), budget - spent)}: ") or not walk(
                    item, inner
                ):
                    return False
            return emit(f"\n{indent}}}")
        if isinstance(node, list | tuple):
            if not node:
                return emit("[]")
            emit("[")
            inner = indent + "  "
            for n, item in enumerate(node):
                if not emit(f"{',' if n else ''}\n{inner}") or not walk(item, inner):
                    return False
            return emit(f"\n{indent}]")
        return emit(_scalar(node, budget - spent))

    walk(value, "")
    if any(reason.startswith("only the first") for reason in cut):
        out.append(" …")
    return "".join(out), "; ".join(sorted(cut))


def _scalar(value: Any, room: int) -> str:
    if isinstance(value, str):
        room = max(room, 0)
        if len(value) > room + 1:
            return json.dumps(value[:room], ensure_ascii=False)[:-1] + '…"'
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(str(value)[: max(room, 0)], ensure_ascii=False)


def _object_blocks(args: dict) -> list[Block]:
    """Fields for the short values, then a block per value with a shape; plain JSON if none has one."""
    blocks: list[Block] = []
    used: set[str] = set()
    for old_key, new_key in EDIT_KEYS:
        old, new = args.get(old_key), args.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            label = next((str(args[k]) for k in PATH_KEYS if isinstance(args.get(k), str)), "")
            blocks.append(DiffBlock(label[:MAX_FIELD_CHARS], edit_diff(old, new), len(old) + len(new)))
            used |= {old_key, new_key}
            break
    items: list[tuple[str, str]] = []
    for key, item in args.items():
        if key in used:
            continue
        name = str(key)[:MAX_FIELD_CHARS]
        if isinstance(item, str):
            shaped = _string_blocks(name, item)
            if shaped:
                blocks.extend(shaped)
                continue
        elif isinstance(item, list) and item and all(isinstance(x, str) for x in item):
            # A command as argv (Codex's shell: ["bash", "-lc", "<script>"]): its shaped words as blocks.
            words, shaped = [], []
            for n, word in enumerate(item[:ARGV_WORDS]):
                found = _string_blocks(f"{name}[{n}]", word)
                shaped.extend(found)
                words.append(f"({name}[{n}] below)" if found else shlex.quote(word))
            if shaped:
                items.append((name, _short(" ".join(words))))
                blocks.extend(shaped)
                continue
        elif isinstance(item, dict | list) and item:
            blocks.append(json_block(name, item))
            continue
        items.append((name, _short(item if isinstance(item, str) else json.dumps(item, default=str))))
    if not any(isinstance(b, Code | DiffBlock) for b in blocks):
        return [json_block("", args)]
    shaped_blocks = [Fields(items)] if items else []
    return (shaped_blocks + blocks)[:MAX_BLOCKS]


def _string_blocks(label: str, text: str) -> list[Block]:
    """A patch as a diff, a multi-line string as code; nothing for one line of text."""
    if is_patch(text):
        return [DiffBlock(label, parse_patch(text), len(text))]
    head = text[: MAX_CHARS + 1]
    if "\n" in head.rstrip("\n"):
        return [code_block(label, head.rstrip("\n") if len(head) == len(text) else text)]
    return []


def _command_args(text: str) -> dict | None:
    """`str_replace_editor str_replace /f.py --old_str 'a' --new_str 'b'` as {command, path, old_str, new_str}."""
    words = _shell_words(text)
    if words is None:
        return None
    positional = ["tool", "command", "path"]
    args: dict[str, str] = {}
    n = 0
    while n < len(words):
        word = words[n]
        if word.startswith("--") and n + 1 < len(words):
            args[word[2:]] = words[n + 1]
            n += 2
            continue
        if positional:
            args[positional.pop(0)] = word
        n += 1
    args.pop("tool", None)
    return args


def _shell_words(text: str) -> list[str] | None:
    try:
        return shlex.split(text, posix=True)
    except ValueError:  # an unclosed quote: the text was cut, or is not a command
        return None


def _json_text(text: str) -> Any:
    stripped = text.strip()
    if len(stripped) > PARSE_CHARS or not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _cut_lines(text: str) -> tuple[list[str], str]:
    head = text[:MAX_CHARS]
    lines = head.split("\n", MAX_LINES)
    notes = []
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
        notes.append(f"the first {MAX_LINES:,} lines shown")
    elif len(text) > MAX_CHARS:
        notes.append(f"the first {MAX_CHARS:,} characters shown")
    if notes:
        notes.append(f"{size_label(len(text))} in all")
    return lines, ", ".join(notes)


def _short(text: str) -> str:
    return text if len(text) <= MAX_FIELD_CHARS else text[:MAX_FIELD_CHARS] + "…"


def size_label(length: int) -> str:
    if length < 1_000:
        return f"{length} chars"
    if length < 1_000_000:
        return f"{length / 1_000:.1f} K chars"
    return f"{length / 1_000_000:.1f} M chars"
