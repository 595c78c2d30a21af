"""The one way this app writes CSV: cells that a spreadsheet would run as a formula are defused.

A trace's task text, a mode name, a username or a batch name comes from whoever imported or typed it; a cell
starting with = + - @ (or a tab or carriage return, which some spreadsheets skip before one of those) is run
as a formula when the CSV is opened (`=HYPERLINK(...)` leaks data on a click; DDE runs commands). Such a
cell gets a leading apostrophe, which spreadsheets show as text (OWASP's advice). Plain numbers ("-0.25")
are left alone: they cannot be formulas, and must stay numbers. No Django here.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)")


def safe_cell(value: Any) -> Any:
    """`value`, with a leading apostrophe if it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class SafeWriter:
    """csv.writer's writerow/writerows, every cell through `safe_cell`."""

    def __init__(self, stream: Any, **options: Any):
        self._writer = csv.writer(stream, **options)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([safe_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream: Any, **options: Any) -> SafeWriter:
    """Use instead of `csv.writer` for anything a person may open in a spreadsheet."""
    return SafeWriter(stream, **options)
