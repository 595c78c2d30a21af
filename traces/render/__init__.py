"""Tool calls and outputs rendered by shape (issue 34): code with line numbers, edits and patches as diffs,
JSON pretty-printed and folded. Pure (no Django): `shapes` finds blocks, `diff` builds diffs, `html` writes
escaped markup; traces/step_html.py puts them in a step's article."""

from traces.render.html import blocks_html, highlight
from traces.render.shapes import argument_blocks, call_text_blocks, output_blocks

__all__ = ["argument_blocks", "blocks_html", "call_text_blocks", "highlight", "output_blocks"]
