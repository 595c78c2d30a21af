"""What a run covers: a batch, an outcome or a saved view of the project, and disjoint samples."""

from __future__ import annotations

import pytest

from annotator.discovery.service import DiscoveryError, parse_scope, scope_ids, split_sample
from annotator.models import SavedView
from traces.models import Trace


def test_a_batch_an_outcome_and_a_saved_view_select_the_projects_traces(
    project, owner, owner_access, synthetic
):
    everything = sorted(Trace.objects.in_project(project).values_list("pk", flat=True))
    failed = sorted(Trace.objects.in_project(project).filter(outcome="failure").values_list("pk", flat=True))
    assert scope_ids(owner_access, *parse_scope("batch:synthetic")) == everything
    assert scope_ids(owner_access, *parse_scope("outcome:failure")) == failed
    SavedView.objects.create(
        project=project, name="Failures", params=[["outcome", "failure"]], created_by=owner
    )
    assert scope_ids(owner_access, *parse_scope("view:Failures")) == failed
    for wrong in ("batch:nope", "view:nope", "outcome:maybe", "everything"):
        with pytest.raises(DiscoveryError):
            scope_ids(owner_access, *parse_scope(wrong))


@pytest.mark.parametrize(("n", "sample", "gate"), [(300, 200, 100), (90, 60, 30), (10, 200, 100), (2, 5, 5)])
def test_the_gate_sample_is_never_seen_by_induction(n, sample, gate):
    induce, held = split_sample(range(n), sample, gate, seed="s")
    assert not set(induce) & set(held)
    assert len(induce) <= sample and len(held) <= gate and held
    assert split_sample(range(n), sample, gate, seed="s") == (induce, held)  # a fixed seed: the same samples
