"""The agreement page's kappa curve per mode: points in the order gold was decided, numbers equal to
scikit-learn's on the same traces, the "good enough?" hint, and the same curve in the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from annotator.models import AdjudicationItem, GoldHistory, GoldLabel
from annotator.services.llm.agreement import llm_agreement
from taxonomy.models import FailureMode
from tests.factories import trace_with_steps
from tests.triage.helpers import model_says, run_model

# Per trace (in trace order): the model always agrees with gold on FM-1.1, and on FM-1.3 it varies.
N = 12
GOLD_11 = [i % 3 == 0 for i in range(N)]
GOLD_13 = [i % 2 == 0 for i in range(N)]
MODEL_13 = [GOLD_13[i] if i not in (1, 4, 11) else not GOLD_13[i] for i in range(N)]


@pytest.fixture
def curve_world(project, batch, llm_config, chat_server, clock):
    traces = [trace_with_steps(4, batch=batch) for _ in range(N)]
    said = [{c for c, on in (("FM-1.1", GOLD_11[i]), ("FM-1.3", MODEL_13[i])) if on} for i in range(N)]
    run_model(project, chat_server, clock, [model_says(s) for s in said])
    modes = {m.code: m for m in FailureMode.objects.filter(version=project.taxonomy_version)}
    start = timezone.now()
    for i, trace in enumerate(traces):
        item = AdjudicationItem.objects.create(project=project, trace=trace, status="resolved")
        codes = [c for c, on in (("FM-1.1", GOLD_11[i]), ("FM-1.3", GOLD_13[i])) if on]
        GoldLabel.objects.bulk_create(
            GoldLabel(item=item, mode=modes[c], source="adjudicator") for c in codes
        )
        history = GoldHistory.objects.create(project=project, trace=trace, item=item, action="decided")
        # Gold arrived in reverse trace order.
        GoldHistory.objects.filter(pk=history.pk).update(at=start + timedelta(minutes=N - i))
    return traces


def test_the_curve_follows_the_order_gold_arrived_in_and_equals_sklearn(project, curve_world):
    [entry] = llm_agreement(project, n_boot=10)
    curves = {mode["code"]: mode for mode in entry["kappa_curve"]}
    fm13 = curves["FM-1.3"]
    assert [p["n_gold"] for p in fm13["points"]] == [10, 12]
    arrived = list(reversed(range(N)))  # gold order: the last trace first
    first10 = arrived[:10]
    expected = cohen_kappa_score([MODEL_13[i] for i in first10], [GOLD_13[i] for i in first10])
    assert fm13["points"][0]["kappa"] == pytest.approx(expected, abs=1e-9)
    assert fm13["points"][1]["kappa"] == pytest.approx(cohen_kappa_score(MODEL_13, GOLD_13), abs=1e-9)
    assert not fm13["good_enough"]
    assert curves["FM-1.1"]["good_enough"] and [p["kappa"] for p in curves["FM-1.1"]["points"]] == [1.0, 1.0]
    assert curves["FM-2.2"]["points"] == [{"n_gold": 10, "kappa": None}, {"n_gold": 12, "kappa": None}]


def test_the_page_draws_each_curve_and_the_api_returns_it(client, project, curve_world, owner):
    client.force_login(owner)
    page = client.get(reverse("project-llm-agreement", args=[project.slug])).content.decode()
    assert page.count('<svg class="kappa-curve"') == 2  # FM-1.1 and FM-1.3; the others are undefined
    assert "good enough for this mode?" in page and "at the last two points" in page
    body = client.get(f"/api/projects/{project.slug}/llm-agreement/").json()
    curve = {m["code"]: m for m in body["raters"][0]["kappa_curve"]}
    assert curve["FM-1.1"]["good_enough"] is True
    assert "0.8" in body["curve_rule"]
