"""Tests never assert on wall-clock time: a busy laptop or CI machine is slower, and speed is what
``bench/`` measures. Waiting for a condition with a deadline is fine; asserting a duration is not."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
_CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"}


def _is_clock_call(node: ast.AST) -> bool:
    """`time.perf_counter()` and friends (also `perf_counter()` imported by name)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in _CLOCKS and isinstance(func.value, ast.Name) and func.value.id == "time"
    return isinstance(func, ast.Name) and func.id in _CLOCKS - {"time"}


def timing_assertions(source: str) -> list[int]:
    """Line numbers of `assert` statements that read a clock, directly or through a name bound to one."""
    tree = ast.parse(source)
    clocked = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(_is_clock_call(n) for n in ast.walk(node.value))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
        and any(
            _is_clock_call(n) or (isinstance(n, ast.Name) and n.id in clocked) for n in ast.walk(node.test)
        )
    ]


def test_the_checker_catches_a_timed_assertion():
    timed = "import time\nstarted = time.perf_counter()\nassert time.perf_counter() - started < 10\n"
    assert timing_assertions(timed) == [3]
    waited = "import time\ndeadline = time.monotonic() + 5\nwhile time.monotonic() < deadline:\n    pass\n"
    assert timing_assertions(waited) == []


def test_no_test_asserts_on_wall_clock_time():
    found = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in timing_assertions(path.read_text(encoding="utf-8"))
    ]
    assert found == [], f"wall-clock assertions (move them to bench/): {found}"
