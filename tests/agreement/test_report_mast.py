"""The real MAST human-labelled file (19 traces, 3 annotators): per-mode Fleiss' kappa from
`import_traces ... --project` + `agreement --json` equals statsmodels and irrCAC on the same votes."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from taxonomy.schema import resolve_mode
from taxonomy.services import version_to_spec
from tests.agreement._reference import irrcac, krippendorff_nominal, statsmodels_fleiss
from tests.services import datasets_dir, missing
from traces.importers import mast_labelled

TOL = 1e-9
FILE = "mast/MAD_human_labelled_dataset.json"


def votes_from_file(path, version) -> tuple[list[str], np.ndarray]:
    """(items, 3 annotators, modes) straight from the file: a vote for a final MAST mode is a "true" on any
    of the file's mode names that map to it (old names map through the taxonomy's aliases, names with no
    successor are ignored), exactly what --ignore-unknown-modes keeps. The file's two bare NaN votes are
    missing (-1), never "not chosen"."""
    spec = version_to_spec(version)
    codes = [mode.code for mode in version.modes.order_by("order")]
    with path.open("rb") as stream:
        records = list(mast_labelled.parse(stream, path.name))
    annotators = ["annotator_1", "annotator_2", "annotator_3"]
    votes = np.zeros((len(records), len(annotators), len(codes)), dtype=np.int8)
    for i, record in enumerate(records):
        for annotation in record.annotations:
            j = annotators.index(annotation.annotator)
            for name in annotation.missing:
                mode = resolve_mode(spec, name)
                if mode is not None:
                    votes[i, j, codes.index(mode.code)] = -1
            for label in annotation.labels:
                mode = resolve_mode(spec, label.mode)
                if mode is not None:
                    votes[i, j, codes.index(mode.code)] = 1
    return codes, votes


def complete(table: np.ndarray) -> np.ndarray:
    """Fleiss' kappa needs every rater on every item: items with a missing vote are left out."""
    return table[(table >= 0).all(axis=1)]


def import_mast(project) -> Path:
    """Import MAST's human-labelled release into `project` as a user would; returns the file's path."""
    path = datasets_dir() / FILE
    if not path.exists():
        missing(str(path), "The MAST tests read MAST's human-labelled release from ../shared/datasets/mast/.")
    call_command(
        "import_traces",
        str(path),
        batch="mast",
        project=project.slug,
        ignore_unknown_modes=True,
        stdout=io.StringIO(),
    )
    return path


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_mast_fleiss_kappa_per_mode_matches_statsmodels_and_irrcac(project, tmp_path):
    path = import_mast(project)
    buffer = io.StringIO()
    call_command("agreement", project.slug, "--json", stdout=buffer)
    report = json.loads(buffer.getvalue())
    codes, votes = votes_from_file(path, project.taxonomy_version)

    assert report["counts"]["items"] == 19
    assert [r["username"] for r in report["raters"]] == [
        f"MAD_human_labelled_dataset/annotator_{n}" for n in (1, 2, 3)
    ]
    assert report["kappa_statistic"] == "fleiss_kappa"
    compared = 0
    for k, row in enumerate(report["modes"]):
        assert row["code"] == codes[k]
        table = votes[:, :, k]
        # Fleiss' kappa generalised to a varying number of raters per item (irrCAC): a missing vote leaves
        # the item rated by two; statsmodels needs complete items, so it is compared where none is missing.
        expected = (
            statsmodels_fleiss(table) if (table >= 0).all() else irrcac(table, "fleiss")["coefficient_value"]
        )
        if math.isnan(expected):  # nobody (or everybody) chose the mode: undefined, with the reason
            assert row["fleiss_kappa"]["value"] is None
            assert row["fleiss_kappa"]["undefined_code"] == "no_variation"
            continue
        assert row["fleiss_kappa"]["value"] == pytest.approx(expected, abs=TOL)
        assert row["fleiss_kappa"]["value"] == pytest.approx(
            irrcac(table, "fleiss")["coefficient_value"], abs=TOL
        )
        assert row["krippendorff_alpha"]["value"] == pytest.approx(krippendorff_nominal(table), abs=TOL)
        compared += 1
    assert compared >= 10  # the file has variation on most modes; make sure the test compares something
    # The file's NaN votes (FM-3.2 and FM-3.3) are missing, not "not chosen": the vote nobody gave no longer
    # counts (with it counted as a 0, alpha was the zero-filled figure below).
    k = codes.index("FM-3.2")
    table = votes[:, :, k]
    assert (table < 0).sum() == 1
    zero_filled = np.where(table < 0, 0, table)
    fm32 = report["modes"][k]
    assert fm32["krippendorff_alpha"]["value"] == pytest.approx(krippendorff_nominal(table), abs=TOL)
    assert fm32["krippendorff_alpha"]["value"] != pytest.approx(krippendorff_nominal(zero_filled), abs=1e-6)
    # Complete-case Fleiss (statsmodels, the item with the missing vote left out) is the 0.7500 of issue 12;
    # the report's Fleiss is irrCAC's generalisation, which keeps that item with its two votes.
    assert statsmodels_fleiss(complete(table)) == pytest.approx(0.75, abs=1e-9)
