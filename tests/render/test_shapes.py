"""Tool calls a coder can read (issue 34): edits and patches as diffs, scripts as numbered code, big JSON
folded, every shape escaped and bounded. traces.render is pure: no database here."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from traces.render import argument_blocks, blocks_html, call_text_blocks, output_blocks
from traces.render.html import FOLD_LINES
from traces.render.shapes import MAX_CHARS, MAX_LINES, Code, DiffBlock, Fields, JsonBlock

EVIL = "<script>alert(1)</script></pre>\x00\x1b[31m\u202e&amp;"
OUR_TAGS = {"div", "span", "pre", "details", "summary", "dl", "dt", "dd", "code", "p", "mark"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def _text_of(html: str, cls: str) -> list[str]:
    """The text of each <span class="cls"> line, unescaped, in order."""

    class Lines(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.out, self.inside = [], False

        def handle_starttag(self, tag, attrs):
            if tag == "span" and dict(attrs).get("class", "").split()[-1:] == [cls]:
                self.inside = True
                self.out.append("")

        def handle_endtag(self, tag):
            if tag == "span":
                self.inside = False

        def handle_data(self, data):
            if self.inside:
                self.out[-1] += data

    parser = Lines()
    parser.feed(html)
    return parser.out


def test_a_str_replace_edit_shows_as_a_diff_of_its_lines():
    args = {
        "command": "str_replace",
        "path": "/testbed/calc.py",
        "old_str": "def add(a, b):\n    return a - b\n",
        "new_str": "def add(a, b):\n    return a + b\n",
    }
    blocks = argument_blocks(args)
    assert isinstance(blocks[0], Fields) and ("path", "/testbed/calc.py") in blocks[0].items
    diff = next(b for b in blocks if isinstance(b, DiffBlock))
    assert diff.label == "/testbed/calc.py"
    html = blocks_html(blocks)
    assert _text_of(html, "del") == ["-    return a - b"]
    assert _text_of(html, "add") == ["+    return a + b"]
    assert _text_of(html, "ctx") == [" def add(a, b):"]
    assert "1 added, 1 removed" in html


def test_a_swe_agent_command_line_edit_shows_as_a_diff():
    action = (
        "str_replace_editor str_replace /testbed/a.py   --old_str 'x = 1\ny = 2' --new_str 'x = 1\ny = 3'"
    )
    html = blocks_html(call_text_blocks(action))
    assert _text_of(html, "del") == ["-y = 2"] and _text_of(html, "add") == ["+y = 3"]


@pytest.mark.parametrize(
    "patch",
    [
        "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    run(1)\n+    run(2)\n*** End Patch\n",
        "diff --git a/src/app.py b/src/app.py\nindex 1..2 100644\n--- a/src/app.py\n+++ b/src/app.py\n"
        "@@ -1,2 +1,2 @@\n def main():\n-    run(1)\n+    run(2)\n",
    ],
    ids=["codex apply_patch", "git diff"],
)
def test_a_patch_shows_as_a_diff_with_its_file_headers(patch):
    for blocks in (
        argument_blocks({"input": patch}),
        argument_blocks(patch),
        output_blocks("Done.\n" + patch),
    ):
        html = blocks_html(blocks)
        assert _text_of(html, "del") == ["-    run(1)"] and _text_of(html, "add") == ["+    run(2)"]
        assert any("src/app.py" in line for line in _text_of(html, "file"))


def test_a_bash_script_shows_as_numbered_code():
    script = "set -e\ncd /repo\npython -m pytest -q tests/test_calc.py"
    for blocks in (
        argument_blocks({"command": script, "is_input": False}),  # OpenHands execute_bash
        argument_blocks({"command": ["bash", "-lc", script]}),  # Codex shell
        call_text_blocks(script),  # SWE-agent's action text
    ):
        code = next(b for b in blocks if isinstance(b, Code))
        assert code.lines == script.split("\n")
        html = blocks_html(blocks)
        assert [n for _, a in _tags(html) if (n := a.get("data-n"))] == ["1", "2", "3"]


def test_an_edit_command_numbers_its_lines_from_where_it_starts():
    blocks = call_text_blocks("edit 41:42\n    return total\n    # done\nend_of_edit")
    code = next(b for b in blocks if isinstance(b, Code))
    assert code.first_line == 41 and code.lines == ["    return total", "    # done"]


def test_one_line_of_text_is_left_as_it_was():
    assert call_text_blocks("ls -la /repo") == []
    assert output_blocks("3 passed in 0.2s") == []


def test_small_json_is_pretty_printed_and_huge_json_is_folded_and_cut():
    small = blocks_html(argument_blocks({"q": "flights", "limit": 3}))
    assert "<details" not in small and "&quot;limit&quot;: 3" in small
    huge = {"rows": [{"id": i, "value": "v" * 40} for i in range(100_000)]}
    blocks = argument_blocks(huge)
    assert isinstance(blocks[0], JsonBlock) and blocks[0].cut
    html = blocks_html(blocks)
    assert html.startswith('<details class="shape shape-json folded">')  # closed: no "open"
    assert "Cut: " in html and len(blocks[0].lines) <= MAX_LINES


def test_long_code_is_folded_with_its_size_and_opens_on_a_search_hit():
    script = "\n".join(f"echo {n}" for n in range(FOLD_LINES + 20))
    html = blocks_html(argument_blocks({"command": script}))
    assert '<details class="shape shape-code folded">' in html and "100 lines · 789 chars" in html
    opened = blocks_html(argument_blocks({"command": script}), "echo 7")
    assert (
        '<details class="shape shape-code folded" open>' in opened
        and '<mark class="hit">echo 7</mark>' in opened
    )


@pytest.mark.parametrize(
    "value",
    [
        {"path": EVIL, "old_str": EVIL + "\nx", "new_str": EVIL + "\ny"},
        {"input": f"*** Begin Patch\n*** Update File: {EVIL}\n-{EVIL}\n+{EVIL}\n*** End Patch"},
        {"command": f"echo 1\n{EVIL}", EVIL: EVIL},
        {"command": ["bash", EVIL, f"a\n{EVIL}"]},
        {EVIL: [EVIL, {EVIL: EVIL}]},
        EVIL,
        f"line\n{EVIL}",
    ],
    ids=["edit", "patch", "script and fields", "argv", "json", "one line", "code"],
)
def test_hostile_text_stays_text_in_every_shape(value):
    for html in (blocks_html(argument_blocks(value), "<script"), blocks_html(argument_blocks(value))):
        assert "<script" not in html and "\x00" not in html and "\x1b" not in html
        assert "&lt;script&gt;" in html or "&lt;script" in html
        for tag, attributes in _tags(html):
            assert tag in OUR_TAGS, tag
            assert set(attributes) <= {"class", "data-n", "open"}, attributes
    output = blocks_html(
        output_blocks(f"{EVIL}\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-{EVIL}\n+ok")
    )
    assert "<script" not in output and "&lt;/pre&gt;" in output


def test_a_ten_megabyte_argument_renders_a_bounded_block_and_says_what_was_cut():
    many_lines = "x = 1\n" * 2_000_000  # 12 MB
    one_line = "y" * 10_000_000
    for value in (
        {"file_text": many_lines},
        {"old_str": many_lines, "new_str": many_lines + "z"},
        {"input": "*** Begin Patch\n" + "+a\n" * 3_000_000},
        one_line,
        {"blob": one_line},
    ):
        html = blocks_html(argument_blocks(value))
        assert len(html) < 40 * MAX_CHARS and "Cut: " in html
    # How long this takes is measured in bench/bench_viewer.py, not asserted here.


def test_control_characters_and_bidi_overrides_are_shown_not_passed_through():
    html = blocks_html(argument_blocks({"command": "echo a\x00b\x1b[31m\nif ok:\u202e  # x"}))
    assert "\x00" not in html and "\x1b" not in html and "\u202e" not in html
    assert "a␀b␛[31m" in html and "⟨U+202E⟩" in html


def test_a_swe_agent_search_and_replace_edit_shows_as_a_diff():
    action = (
        "edit 'def division(a: float, b: float) -> float' 'def division(a: float, b: float) -> float:' False"
    )
    html = blocks_html(call_text_blocks(action))
    assert _text_of(html, "del") == ["-def division(a: float, b: float) -> float"]
    assert _text_of(html, "add") == ["+def division(a: float, b: float) -> float:"]


def test_json_nested_deeper_than_anyone_reads_is_cut_not_recursed():
    value: object = "bottom"
    for _ in range(900):
        value = {"a": [value]}
    block = argument_blocks(value)[0]
    assert isinstance(block, JsonBlock) and "bottom" not in "\n".join(block.lines)
    assert block.cut == "values nested more than 40 levels deep shown as …"
