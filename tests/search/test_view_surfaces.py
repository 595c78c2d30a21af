"""Surfaces that take a saved view: the dataset export, a calibration round, the agreement report and the
signatures (a view compiles to the same traces as the filters it holds)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.access import ProjectAccess
from annotator.models import CalibrationRound, SavedView
from annotator.search.filters import parse
from annotator.search.saved import do_open_view_round, do_save_view
from annotator.services.exports import ExportOptions, ExportOptionsError, build_export, clean_options
from annotator.services.exports.rows import selected_traces
from annotator.services.rounds import RoundError


def _save(project, user, name, **params) -> SavedView:
    return do_save_view(ProjectAccess.of(user, project), name, parse(params))


def test_export_options_take_a_view_and_keep_its_filters(world, owner):
    _save(world.project, owner, "Failures", outcome="failure")
    options = clean_options(world.project, {"view": "Failures"})
    assert options.view == "Failures" and options.view_params == (("outcome", "failure"),)
    again = ExportOptions.from_dict(json.loads(json.dumps(options.as_dict())))
    assert again == options  # through the Export row's JSON and back
    names = sorted(selected_traces(world.project, again).values_list("external_id", flat=True))
    assert names == ["sre-1", "web-2"]
    with pytest.raises(ExportOptionsError, match="not a saved view"):
        clean_options(world.project, {"view": "Nope"})
    SavedView.objects.filter(name="Failures").update(params=[["gold_mode", "FM-9.9"]])
    with pytest.raises(ExportOptionsError, match="gold_mode"):
        clean_options(world.project, {"view": "Failures"})


def test_a_label_view_limits_the_dataset_export(world, owner, tmp_path):
    _save(world.project, owner, "Gold FM-1.3", gold_mode="FM-1.3")
    summary = build_export(
        world.project, clean_options(world.project, {"view": "Gold FM-1.3"}), tmp_path / "x"
    )
    assert dict((c.name, c.rows) for c in summary.configs)["traces"] == 1


def test_export_page_api_and_cli_accept_a_view(client, world, owner, tmp_path):
    _save(world.project, owner, "Failures", outcome="failure")
    client.force_login(owner)
    bad = client.post(
        "/api/projects/demo-project/exports/", {"view": "Nope"}, content_type="application/json"
    )
    assert bad.status_code == 400 and "not a saved view" in bad.json()["detail"]
    page = client.get("/p/demo-project/export/").content.decode()
    assert "<option>Failures</option>" in page
    with pytest.raises(CommandError, match="not a saved view"):
        call_command("export_dataset", "demo-project", "--out", str(tmp_path / "a"), "--view", "Nope")
    call_command(
        "export_dataset",
        "demo-project",
        "--out",
        str(tmp_path / "b"),
        "--view",
        "Failures",
        stdout=StringIO(),
    )
    lines = (tmp_path / "b" / "README.md").read_text()
    assert lines  # the folder was written; its traces are the view's (test above counts them)


def test_a_round_opens_on_a_views_traces(world, owner, annotator_a, annotator_b):
    view = _save(world.project, owner, "SRE", benchmark="sre")
    access = ProjectAccess.of(owner, world.project)
    round_ = do_open_view_round(
        access, view, name="SRE round", annotators=[annotator_a.username, annotator_b.username]
    )
    assert sorted(round_.traces.values_list("external_id", flat=True)) == ["sre-1", "sre-2"]
    assert round_.selection == {"how": "saved view", "view": "SRE", "n": 2}
    empty = _save(world.project, owner, "None", benchmark="nothing")
    with pytest.raises(RoundError, match="holds no trace"):
        do_open_view_round(access, empty, name="R2", annotators=[annotator_a.username, annotator_b.username])


def test_rounds_command_and_page_open_a_round_from_a_view(client, world, owner, annotator_a, annotator_b):
    _save(world.project, owner, "Web", benchmark="web")
    out = StringIO()
    call_command(
        "rounds", "demo-project", "open", "Web round", "--annotators",
        f"{annotator_a.username},{annotator_b.username}", "--view", "Web", stdout=out,
    )  # fmt: skip
    assert sorted(
        CalibrationRound.objects.get(name="Web round").traces.values_list("external_id", flat=True)
    ) == [
        "web-1",
        "web-2",
    ]
    view = _save(world.project, owner, "SRE", benchmark="sre")
    client.force_login(owner)
    response = client.post(
        f"/p/demo-project/views/{view.pk}/round/",
        {"round_name": "From the page", "annotators": [annotator_a.username, annotator_b.username]},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and "Opened the calibration round" in response.content.decode()
    assert CalibrationRound.objects.get(name="From the page").selection["view"] == "SRE"
    refused = client.post(
        f"/p/demo-project/views/{view.pk}/round/", {"round_name": "One", "annotators": [annotator_a.username]},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    assert refused.status_code == 400 and "at least two annotators" in refused.content.decode()
