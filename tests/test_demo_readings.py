"""How the demo's raters read a generated trace (annotator.demo_readings): symptoms to modes, the two
judgement calls, the seeded oversights and the adjudicator's choices."""

from __future__ import annotations

from annotator.demo_readings import STRICT, DemoStep, Habits, adjudicate, findings, read_trace
from traces.importers.synthetic import synthetic_traces

LENIENT = Habits(repeat_gap=3, doubt_reach=3)


def _steps(*specs: tuple[str, str, str, str]) -> list[DemoStep]:
    return [DemoStep(i, kind, agent, content, tool) for i, (kind, agent, content, tool) in enumerate(specs)]


USER = ("message", "user", "Fix the bug.", "")


def call(tool: str) -> tuple[str, str, str, str]:
    return ("tool_call", "coder", "", tool)


def result(tool: str) -> tuple[str, str, str, str]:
    return ("tool_result", "tool", f"{tool} output line 3", tool)


def error(tool: str) -> tuple[str, str, str, str]:
    return ("error", "tool", f"Traceback: {tool} failed with exit code 1", tool)


def verdict(word: str) -> tuple[str, str, str, str]:
    return ("message", "verifier", f"Check of step 9: tests {word}.", "")


DOUBT = ("reasoning", "planner", "Step 4: the last result looks wrong.", "")
PLAN = ("message", "planner", "Plan step 5: split the task and delegate to coder.", "")


def modes(steps, outcome="failure", habits=STRICT) -> dict[str, tuple[int, ...]]:
    return {f.mode: f.steps for f in findings(steps, outcome, habits)}


def test_a_pass_after_a_tool_failure_is_an_incorrect_verification():
    steps = _steps(USER, call("run_tests"), error("run_tests"), verdict("pass"))
    assert modes(steps, "success") == {"FM-3.3": (2, 3)}


def test_a_failed_run_ends_on_a_failing_check_or_with_no_check_at_all():
    assert modes(_steps(USER, call("edit_file"), result("edit_file"), verdict("fail"))) == {"FM-3.1": (3,)}
    assert modes(_steps(USER, verdict("fail"), call("edit_file"), result("edit_file"))) == {"FM-3.1": (1, 3)}
    assert modes(_steps(USER, call("edit_file"), result("edit_file"))) == {"FM-3.2": (2,)}
    # A run that succeeded, or whose last check passed, shows neither.
    assert modes(_steps(USER, call("edit_file"), result("edit_file")), "success") == {}
    assert modes(_steps(USER, verdict("fail"), verdict("pass"))) == {}


def test_the_judgement_calls_depend_on_the_readers_habits():
    repeated_late = _steps(USER, call("read_file"), result("read_file"), PLAN, call("read_file"))
    assert modes(repeated_late, "success") == {}
    assert modes(repeated_late, "success", LENIENT) == {"FM-1.3": (1, 4)}
    repeated_at_once = _steps(USER, call("read_file"), result("read_file"), call("read_file"))
    assert modes(repeated_at_once, "success") == {"FM-1.3": (1, 3)}

    doubt_then_later = _steps(USER, DOUBT, verdict("pass"), PLAN)
    assert modes(doubt_then_later, "success") == {}
    assert modes(doubt_then_later, "success", LENIENT) == {"FM-2.6": (1, 3)}
    assert modes(_steps(USER, DOUBT, call("edit_file")), "success") == {"FM-2.6": (1, 2)}


def test_a_reading_is_the_same_every_time_and_says_no_failure_when_there_is_none():
    steps = _steps(USER, call("edit_file"), result("edit_file"), verdict("pass"))
    first = read_trace(steps, "success", STRICT, reader="alice", trace="t1")
    assert first == read_trace(steps, "success", STRICT, reader="alice", trace="t1")
    assert first.no_failure and first.note and first.confidence in (4, 5)


def test_plain_symptoms_are_sometimes_overlooked_judgement_calls_never():
    """Over the demo's traces the annotators miss a few plain symptoms (real disagreements), never most."""
    seen = missed = 0
    for trace in synthetic_traces(40, steps=24, seed=7):
        steps = [
            DemoStep(i, s.kind, s.agent or "", s.content or "", s.tool_name or "")
            for i, s in enumerate(trace.steps)
        ]
        every = {f.mode for f in findings(steps, trace.outcome, LENIENT)}
        plain = every - {"FM-1.3", "FM-2.6"}
        for reader in ("alice", "bob"):
            reading = read_trace(steps, trace.outcome, LENIENT, reader=reader, trace=trace.external_id)
            assert every >= reading.modes and every - plain <= reading.modes
            seen += len(plain)
            missed += len(plain - reading.modes)
    assert seen and 0 < missed < seen / 4


def test_the_adjudicator_takes_the_answer_that_matches_the_strict_reading():
    choices = adjudicate(
        ["FM-1.3", "FM-2.6", "FM-3.1"],
        truth=frozenset({"FM-2.6", "FM-3.1"}),
        answers=[frozenset({"FM-1.3", "FM-3.1"}), frozenset({"FM-2.6"})],
    )
    assert [(c.mode, c.choice, c.reason_code) for c in choices] == [
        ("FM-1.3", "b", "definition"),
        ("FM-2.6", "b", "evidence"),
        ("FM-3.1", "a", "evidence"),
    ]
