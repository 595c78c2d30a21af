"""Discovery end to end against the deterministic stand-in: three planted patterns among noise are found,
and nothing else; a restatement of a current mode and an unverifiable quote are dropped; the gate runs on
traces induction did not see; the answers never become labels of the project."""

from __future__ import annotations

from annotator.discovery.process import do_process_discovery
from annotator.discovery.service import do_start_discovery
from annotator.discovery.synthetic import PLANTED
from annotator.models import Annotation, DiscoveryAnswer, DiscoveryRun, LabelApplication
from tests.discovery.conftest import RATERS


def _discover(access, **options) -> DiscoveryRun:
    run = do_start_discovery(
        access, scope="batch:synthetic", raters=RATERS, sample=60, gate_sample=30, enqueue=False, **options
    )
    return do_process_discovery(run.pk)


def test_it_proposes_exactly_the_three_planted_patterns(owner_access, llm_config, synthetic):
    run = _discover(owner_access)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    assert sorted(c["code"] for c in run.candidates) == sorted(p.code for p in PLANTED)
    restated = [d for d in run.dropped if d["code"] == "NO-CHECK"]
    assert restated and restated[0]["mode"] == "FM-3.2" and "restates" in restated[0]["reason"]
    for candidate in run.candidates:
        assert len(candidate["examples"]) >= 3
        for example in candidate["examples"]:
            assert example["trace"] in run.induction_ids


def test_the_gate_runs_on_held_out_traces_with_every_rater(owner_access, llm_config, synthetic, model):
    run = _discover(owner_access)
    assert not set(run.induction_ids) & set(run.held_ids)
    gated = run.answers.filter(phase=DiscoveryAnswer.Phase.GATE)
    assert set(gated.values_list("trace_id", flat=True)) == set(run.held_ids)
    assert set(gated.values_list("rater", flat=True)) == set(RATERS)
    assert set(RATERS) <= set(model.models_seen)  # each request carried its rater's model name
    for stats in run.results["candidates"]:
        assert stats["passes"] and stats["kappa"] == 1.0
    assert run.results["coverage"] is not None


def test_a_candidate_whose_quote_is_not_in_its_step_is_dropped(owner_access, llm_config, synthetic, model):
    model.bad_quote = "UNIT-MIXUP"
    run = _discover(owner_access)
    assert "UNIT-MIXUP" not in [c["code"] for c in run.candidates]
    dropped = next(d for d in run.dropped if d["code"] == "UNIT-MIXUP")
    assert "is not in step" in dropped["reason"]


def test_the_models_answers_never_become_labels(owner_access, llm_config, synthetic):
    before = (Annotation.objects.count(), LabelApplication.objects.count())
    _discover(owner_access)
    assert (Annotation.objects.count(), LabelApplication.objects.count()) == before


def test_with_an_embedding_model_the_endpoints_vectors_group_the_analyses(
    owner_access, llm_config, synthetic, model
):
    llm_config.embeddings_model = "embedder"
    llm_config.save()
    run = _discover(owner_access)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    assert model.embedded > 0 and "embedder" in model.models_seen
    assert run.results["grouped_by"] == "embeddings (embedder)"
    assert sorted(c["code"] for c in run.candidates) == sorted(p.code for p in PLANTED)
