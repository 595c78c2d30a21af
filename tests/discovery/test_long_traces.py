"""Induction reads a trace longer than the budget as the LLM rater does: in overlapping windows of steps by
default (a failure in its middle is found, at its own step number), or with its middle cut out when the
owner chose that (and the methods paragraph says so)."""

from __future__ import annotations

import pytest

from annotator.discovery.estimate import estimate_discovery
from annotator.discovery.process import do_process_discovery
from annotator.discovery.results import methods_paragraph
from annotator.discovery.service import do_start_discovery
from annotator.discovery.synthetic import PLANTED, SyntheticTrace, store_traces
from annotator.models import DiscoveryAnswer, DiscoveryRun
from tests.discovery.conftest import RATERS
from tests.factories import BatchFactory

MIDDLE = 30
FILLER = "The agent lists the files of the working directory and reads the configuration once more. "
OPTIONS = {"scope": "batch:long", "raters": RATERS, "sample": 3, "gate_sample": 1}


@pytest.fixture
def long_traces(project, llm_config):
    """Four traces of 60 steps (about 20,000 characters), each showing partial pagination at step 30 only;
    a budget of 4,000 characters a request."""
    batch = BatchFactory(name="long")
    project.batches.add(batch)
    traces = []
    for n in range(4):
        steps = [f"Routine step {i}. " + FILLER * 3 for i in range(60)]
        steps[MIDDLE] = PLANTED[0].phrase
        traces.append(SyntheticTrace(f"long-{n}", "failure", steps))
    store_traces(batch, traces)
    llm_config.max_trace_chars = 4_000
    llm_config.save()
    return llm_config


def _analyses(run: DiscoveryRun) -> list[dict]:
    return list(run.answers.filter(phase=DiscoveryAnswer.Phase.ANALYSE).values_list("answer", flat=True))


def test_a_failure_in_the_middle_of_a_long_trace_is_found_at_its_own_step(owner_access, long_traces, model):
    estimate = estimate_discovery(owner_access, **OPTIONS)
    run = do_process_discovery(do_start_discovery(owner_access, enqueue=False, **OPTIONS).pk)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    analyses = _analyses(run)
    assert len(analyses) == 3
    for answer in analyses:
        assert answer["windows"] > 1 and not answer["cut"]
        # Two overlapping windows may both show step 30: the failure is kept once.
        assert [f["steps"] for f in answer["failures"]] == [[MIDDLE]]
        assert answer["failures"][0]["quotes"] == [{"step": MIDDLE, "text": PLANTED[0].phrase}]
    windows = sum(answer["windows"] for answer in analyses)
    assert sum(p.startswith("You are an expert reader") for p in model.prompts) == windows
    assert estimate.analysis_requests == windows, "the estimate counts every window"
    assert [c["code"] for c in run.candidates] == [PLANTED[0].code]  # quotes verified at step 30
    assert "3 of the traces analysed exceeded the budget of 4,000 characters" in methods_paragraph(run)
    assert "overlapping windows" in methods_paragraph(run)


def test_with_the_cut_option_the_middle_is_not_seen_and_the_methods_say_so(owner_access, long_traces):
    long_traces.long_traces = "cut"
    long_traces.save()
    run = do_process_discovery(do_start_discovery(owner_access, enqueue=False, **OPTIONS).pk)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    for answer in _analyses(run):
        assert answer["windows"] == 1 and answer["cut"] and answer["failures"] == []
    assert run.candidates == []
    assert (
        "3 of the traces analysed exceeded the budget of 4,000 characters and had their middle cut out"
        in methods_paragraph(run)
    )


def test_a_running_runs_methods_say_how_long_traces_are_read_without_counting_them(
    owner_access, long_traces, django_assert_num_queries
):
    """While the worker writes its analyses, the page's methods paragraph reads only the run: the counts
    come with the groups, once every analysis is in."""
    started = do_start_discovery(owner_access, enqueue=False, **OPTIONS)
    run = DiscoveryRun.objects.select_related("project").get(pk=started.pk)
    with django_assert_num_queries(0):
        methods = methods_paragraph(run)
    assert "Traces over the budget of 4,000 characters are read in overlapping windows" in methods
