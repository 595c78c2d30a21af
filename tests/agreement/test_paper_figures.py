"""Paper-grade figures: per-round agreement from the traces' metadata (`--where`), the mean pairwise Cohen's
kappa that MAST publishes beside the Fleiss headline, and a methods paragraph to paste into a paper."""

from __future__ import annotations

import io
import json
import math
from itertools import combinations

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from sklearn.metrics import cohen_kappa_score

from tests.agreement._reference import irrcac, statsmodels_fleiss
from tests.agreement.test_report_mast import import_mast, votes_from_file
from tests.labels import project_trace, submit
from traces.importers import mast_labelled

TOL = 1e-9
pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


def agreement_json(slug: str, *args: str) -> dict:
    buffer = io.StringIO()
    call_command("agreement", slug, "--json", *args, stdout=buffer)
    return json.loads(buffer.getvalue())


def pairwise_cohen(votes: np.ndarray) -> list[list[float]]:
    """Per mode, sklearn's Cohen's kappa of every rater pair on the traces both rated (-1 = missing),
    keeping only the defined values (sklearn gives nan when neither rater varies)."""
    out = []
    for k in range(votes.shape[2]):
        values = []
        for a, b in combinations(range(votes.shape[1]), 2):
            both = (votes[:, a, k] >= 0) & (votes[:, b, k] >= 0)
            if both.sum() == 0:
                continue
            value = cohen_kappa_score(votes[both, a, k], votes[both, b, k])
            if not math.isnan(value):
                values.append(float(value))
        out.append(values)
    return out


@pytest.fixture
def mast_project(project):
    path = import_mast(project)
    with path.open("rb") as stream:
        rounds = np.array([record.metadata["round"] for record in mast_labelled.parse(stream, path.name)])
    codes, votes = votes_from_file(path, project.taxonomy_version)
    return project, rounds, codes, votes


def test_mean_pairwise_cohen_kappa_on_mast_equals_sklearn(mast_project):
    project, _, codes, votes = mast_project
    report = agreement_json(project.slug)
    expected = pairwise_cohen(votes)
    for k, mode in enumerate(report["modes"]):
        assert mode["code"] == codes[k]
        got = mode["mean_pairwise_cohen_kappa"]
        if expected[k]:
            assert got["value"] == pytest.approx(np.mean(expected[k]), abs=TOL)
        else:
            assert got["value"] is None
        assert got["n_pairs_defined"] == len(expected[k])
    pooled = [value for values in expected for value in values]
    overall = report["overall"]["mean_pairwise_cohen_kappa"]
    assert overall["value"] == pytest.approx(np.mean(pooled), abs=TOL)
    assert overall["n_defined"] == len(pooled)
    assert "mean pairwise Cohen's kappa" in overall["formula"]
    # Beside the Fleiss headline, not instead of it.
    assert report["kappa_statistic"] == "fleiss_kappa"


def test_agreement_per_round_from_the_traces_metadata(mast_project):
    project, rounds, _, votes = mast_project
    assert len(set(rounds)) >= 3
    for name in sorted(set(rounds)):
        selected = votes[rounds == name]
        report = agreement_json(project.slug, "--where", f"round={name}")
        assert report["counts"]["items"] == len(selected)
        assert report["filters"] == {"where": [f"round={name}"]}
        expected = pairwise_cohen(selected)
        for k, mode in enumerate(report["modes"]):
            table = selected[:, :, k]
            # Missing votes (-1) leave an item rated by two: Fleiss generalised (irrCAC); else statsmodels.
            fleiss = (
                statsmodels_fleiss(table)
                if (table >= 0).all()
                else irrcac(table, "fleiss")["coefficient_value"]
            )
            if math.isnan(fleiss):
                assert mode["fleiss_kappa"]["value"] is None
            else:
                assert mode["fleiss_kappa"]["value"] == pytest.approx(fleiss, abs=TOL)
            if expected[k]:
                assert mode["mean_pairwise_cohen_kappa"]["value"] == pytest.approx(
                    np.mean(expected[k]), abs=TOL
                )


def test_the_methods_paragraph_names_data_filters_statistics_and_seed(mast_project):
    project, *_ = mast_project
    report = agreement_json(project.slug, "--where", "round=Round 3")
    methods = report["methods"]
    assert methods["filters"] == {"where": ["round=Round 3"]}
    assert methods["fingerprint"] == report["fingerprint"] and len(methods["fingerprint"]) == 64
    assert methods["software"].startswith("trace-annotator")
    text = methods["text"]
    for needle in (
        "5 traces",
        "where = ['round=Round 3']",
        "mean pairwise Cohen's kappa",
        "seed 0",
        report["fingerprint"],
    ):
        assert needle in text
    printed = io.StringIO()
    call_command("agreement", project.slug, "--where", "round=Round 3", "--methods", stdout=printed)
    assert printed.getvalue().strip() == text


def test_where_filters_any_metadata_key_and_explains_a_malformed_condition(project, annotator_a, annotator_b):
    dev = project_trace(project, metadata={"split__name": "dev", "round": "2"})
    test = project_trace(project, metadata={"split__name": "test"})
    for trace in (dev, test):
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        submit(project, trace, annotator_b, {"FM-1.1": [2]})
    assert agreement_json(project.slug, "--where", "split__name=dev")["counts"]["items"] == 1
    assert agreement_json(project.slug, "--where", "round=2")["counts"]["items"] == 1
    assert agreement_json(project.slug, "--where", "split__name=none")["counts"]["items"] == 0
    with pytest.raises(CommandError, match="write key=value"):
        call_command("agreement", project.slug, "--where", "round", stdout=io.StringIO())


def test_the_page_and_the_api_filter_by_metadata_and_show_the_paper_figures(
    client, project, owner, annotator_a, annotator_b
):
    from rest_framework.test import APIClient

    for split in ("dev", "dev", "test"):
        trace = project_trace(project, metadata={"split": split})
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        submit(project, trace, annotator_b, {"FM-1.1": [2]} if split == "dev" else {})
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/agreement/", {"where": "split=dev"}).content.decode()
    assert 'value="split=dev"' in page and "Methods, for your paper" in page
    assert "on 2 traces" in page
    bad = client.get(f"/p/{project.slug}/agreement/", {"where": "split"})
    assert bad.status_code == 400 and "write key=value" in bad.content.decode()
    api = APIClient()
    api.force_authenticate(owner)
    response = api.post(f"/api/projects/{project.slug}/agreement/", {"where": ["split=test"]}, format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert results["counts"]["items"] == 1 and results["filters"] == {"where": ["split=test"]}
