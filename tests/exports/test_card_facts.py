"""Card facts from data only: every sentence of the dataset card is derived from what is stored, or says
"unknown". Imported labels are not called blind, an all-unknown model is not "a single model", and the card
says how many imported labels were left out and how many votes the source left empty."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from annotator.services.exports import ExportOptions, build_export
from annotator.services.exports.facts import Tally
from tests.factories import ProjectFactory

MAST_LIKE = [
    {
        "round": "1",
        "mas_name": "AG2",
        "benchmark_name": "GSM",
        "trace_id": 7,
        "trace": "user: add 2 and 2\nassistant: 5",
        "annotations": [
            {
                "failure mode": "1.1 Disobey task specification\n\nThe agent ignores the task.",
                "a1": True,
                "a2": None,
                "a3": None,
            },
            {"failure mode": "1.3 Step repetition\n\nRepeats a step.", "a1": False, "a2": False, "a3": None},
            {"failure mode": "9.9 Retired mode\n\nGone.", "a1": True, "a2": True, "a3": None},
        ],
    }
]


def card_of(project, tmp_path) -> str:
    folder = tmp_path / "card"
    build_export(project, ExportOptions(), folder)
    return (folder / "README.md").read_text()


def test_a_card_of_imported_labels_does_not_call_them_blind(mast, tmp_path, settings):
    settings.EXPORT_DIR = tmp_path / "exports"
    project = ProjectFactory(taxonomy_version=mast, blind=True)
    path = tmp_path / "mad.json"
    path.write_text(json.dumps(MAST_LIKE))
    call_command(
        "import_traces",
        str(path),
        "--batch",
        "m",
        "--project",
        project.slug,
        "--ignore-unknown-modes",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    card = card_of(project, tmp_path)
    assert "Blind: yes" not in card
    assert "Blind: unknown (every annotation was imported" in card
    assert "2 annotations by 2 raters were imported with the data" in card
    assert "Written guidelines: unknown for the imported annotations" in card
    # a1's and a2's votes on the retired mode were left out; a2 left one real mode empty. a3 left every vote
    # empty: nothing usable, so no annotation (issue 32) and nothing of it on the card.
    assert "Imported labels left out because the taxonomy lacks their mode: 2." in card
    assert "Votes the source left empty (neither yes nor no in the file): 1." in card
    assert "independent annotator(s) per trace" not in card  # the project's overlap says nothing of imports


def test_a_card_never_claims_a_single_model_nobody_recorded(mast, tmp_path, settings):
    settings.EXPORT_DIR = tmp_path / "exports"
    project = ProjectFactory(taxonomy_version=mast)
    path = tmp_path / "mad.json"
    path.write_text(json.dumps(MAST_LIKE))
    call_command(
        "import_traces",
        str(path),
        "--batch",
        "m",
        "--project",
        project.slug,
        "--ignore-unknown-modes",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    card = card_of(project, tmp_path)
    assert "single model" not in card
    assert "The model of every trace is unknown." in card
    assert "single benchmark (GSM)" in card  # a known single value is still said, with its name


def test_labels_made_here_keep_the_projects_settings(labelled, tmp_path):
    card = card_of(labelled, tmp_path)
    assert "were made in this project, which asks for **2** independent annotator(s) per trace" in card
    assert "Blind: yes, annotators never saw each other's labels." in card
    assert "imported" not in card.split("## How it was annotated")[1].split("##")[0]


def test_an_empty_label_list_is_not_counted_as_no_failure():
    tally = Tally()
    tally.annotation(
        {"annotator": "a", "annotator_kind": "human", "no_failure": False, "labels": [], "trace_uid": "x"}
    )
    tally.annotation(
        {"annotator": "b", "annotator_kind": "human", "no_failure": True, "labels": [], "trace_uid": "x"}
    )
    assert (tally.no_failure, tally.no_verdict) == (1, 1)
