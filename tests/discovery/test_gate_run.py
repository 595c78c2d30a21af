"""The codebook gate on its own (candidates from a taxonomy migration's `add` entries), and passing
candidates into the codebook through the proposals and the existing migration."""

from __future__ import annotations

import pytest

from annotator.discovery.process import do_process_discovery
from annotator.discovery.service import (
    DiscoveryError,
    candidates_from_changes,
    do_send_to_proposals,
    do_start_discovery,
    do_start_gate,
)
from annotator.models import DiscoveryRun, ModeProposal
from annotator.services.evolution import (
    do_apply_migration,
    do_preview_migration,
    mapping_text,
    parse_changes_text,
)
from tests.discovery.conftest import RATERS

CHANGES = """
- op: add
  code: PAGINATION
  name: Partial pagination
  definition: The agent reads only the first page of paginated results and acts as if it had them all.
  category: FC3
- op: add
  code: VAGUE
  name: Something off
  definition: An unclear feeling that the agent could have done better.
  category: FC3
"""


def _gate(access, **options) -> DiscoveryRun:
    candidates = candidates_from_changes(parse_changes_text(CHANGES))
    run = do_start_gate(
        access,
        candidates=candidates,
        scope="batch:synthetic",
        raters=RATERS,
        sample=60,
        enqueue=False,
        **options,
    )
    return do_process_discovery(run.pk)


def test_a_consistent_candidate_passes_and_an_inconsistent_one_fails(owner_access, llm_config, synthetic):
    run = _gate(owner_access)
    assert run.status == DiscoveryRun.Status.SUCCEEDED, run.error
    stats = {c["code"]: c for c in run.results["candidates"]}
    assert stats["PAGINATION"]["passes"] and stats["PAGINATION"]["kappa"] == pytest.approx(1.0)
    assert not stats["VAGUE"]["passes"] and stats["VAGUE"]["kappa"] < 0.75
    assert stats["VAGUE"]["disagreements"], "the raters' split traces are shown, with reasons and steps"
    assert len(run.held_ids) == 60


def test_the_gate_needs_three_raters_and_add_entries(owner_access, llm_config, synthetic):
    with pytest.raises(DiscoveryError, match="3 to 8"):
        do_start_gate(owner_access, candidates=[], scope="batch:synthetic", raters="m1,m2", enqueue=False)
    with pytest.raises(DiscoveryError, match="only 'op: add'"):
        candidates_from_changes([{"op": "retire", "code": "FM-1.1"}])
    taken = [{"code": "FM-1.3", "name": "x", "definition": "y"}]
    with pytest.raises(DiscoveryError, match="already a mode"):
        do_start_gate(owner_access, candidates=taken, scope="batch:synthetic", raters=RATERS, enqueue=False)


def test_passing_candidates_become_discovered_proposals_and_then_a_mode(
    project, owner, owner_access, llm_config, synthetic
):
    run = do_start_discovery(
        owner_access, scope="batch:synthetic", raters=RATERS, sample=60, gate_sample=30, enqueue=False
    )
    run = do_process_discovery(run.pk)
    created = do_send_to_proposals(run, actor=owner)
    assert sorted(p.candidate["code"] for p in created) == ["PAGINATION", "STALE-CREDS", "UNIT-MIXUP"]
    assert all(p.discovered and p.discovery_run == run and p.status == "open" for p in created)
    assert do_send_to_proposals(run, actor=owner) == []  # sending twice adds nothing
    chosen = next(p for p in created if p.candidate["code"] == "PAGINATION")
    changes = [
        {
            "op": "add",
            "code": "PAGINATION",
            "name": chosen.suggested_name,
            "definition": chosen.text,
            "category": "FC3",
            "proposals": [chosen.pk],
        }
    ]
    migration = do_preview_migration(project, changes, actor=owner)
    do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    chosen.refresh_from_db()
    project.refresh_from_db()
    assert chosen.status == ModeProposal.Status.ACCEPTED and chosen.mode.code == "PAGINATION"
    assert project.taxonomy_version.modes.filter(code="PAGINATION").exists()


def test_prompt_variants_ask_one_model_with_several_prompt_versions(
    project, owner_access, llm_config, synthetic, model
):
    from annotator.services.llm.config import do_save_prompt

    do_save_prompt(project, "Label carefully: a failure mode is present only when a step shows it.")
    candidates = candidates_from_changes(parse_changes_text(CHANGES))
    started = do_start_gate(
        owner_access,
        candidates=candidates,
        scope="batch:synthetic",
        raters="namer@v1,namer@v2,rater-c",
        sample=20,
        enqueue=False,
    )
    done = do_process_discovery(started.pk)
    assert done.status == DiscoveryRun.Status.SUCCEEDED, done.error
    assert set(done.answers.values_list("rater", flat=True)) == {"namer@v1", "namer@v2", "rater-c"}
    assert "@" not in "".join(model.models_seen)  # the variant's model name is what is sent
    assert any(p.startswith("Label carefully") for p in model.prompts)
    assert any(p.startswith("You are an expert annotator") for p in model.prompts)
    with pytest.raises(DiscoveryError, match="No prompt version 9"):
        do_start_gate(
            owner_access, candidates=candidates, scope="batch:synthetic", raters="namer@v9,b,c", enqueue=False
        )
