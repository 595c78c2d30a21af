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
from tests.factories import UserFactory, add_member


@pytest.fixture
def viewer(project):
    user = UserFactory(username="vera-viewer")
    add_member(project, user, "viewer")
    return user


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


def _report(project, filters):
    from annotator.services.reports import do_compute_report, do_request_report

    report = do_request_report(project, filters, enqueue=False)
    return do_compute_report(report.pk).results


@pytest.mark.parametrize("value", ["test", "dev"])
def test_a_report_on_a_view_equals_the_same_where(world, owner, value):
    from annotator.services.reports import clean_filters

    view = _save(world.project, owner, f"Split {value}", meta=f"split:{value}")
    by_where = clean_filters(world.project, {"where": [f"split={value}"]})
    by_view = clean_filters(world.project, {"view": view.name}, ProjectAccess.of(owner, world.project))
    assert by_view == {"view": view.pk, "view_at": view.updated_at.isoformat()}
    where_results, view_results = _report(world.project, by_where), _report(world.project, by_view)
    for results in (where_results, view_results):  # what differs: when, and the filters' own record
        for key in ("filters", "computed_at", "methods", "data_version", "fingerprint"):
            results.pop(key, None)
    assert view_results == where_results
    assert where_results != _report(world.project, {})  # the scope narrows: the check is not vacuous


def test_report_refuses_unknown_held_and_stale_views(client, world, owner, viewer):
    from annotator.services.reports import ReportFilterError, clean_filters

    label = _save(world.project, owner, "Gold", gold_mode="FM-1.3")
    with pytest.raises(ReportFilterError, match="No saved view"):
        clean_filters(world.project, {"view": "Nope"})
    # A viewer reads the report, but a view on labels is not theirs to pick.
    with pytest.raises(ReportFilterError, match="No saved view"):
        clean_filters(world.project, {"view": label.name}, ProjectAccess.of(viewer, world.project))
    SavedView.objects.filter(pk=label.pk).update(params=[["gold_mode", "FM-9.9"]])
    with pytest.raises(ReportFilterError, match="gold_mode"):
        clean_filters(world.project, {"view": label.name})


def test_agreement_command_page_and_api_take_a_view(client, world, owner):
    view = _save(world.project, owner, "Test split", meta="split:test")
    out = StringIO()
    call_command("agreement", "demo-project", "--view", "Test split", "--json", stdout=out)
    assert json.loads(out.getvalue())
    with pytest.raises(CommandError, match="No saved view"):
        call_command("agreement", "demo-project", "--view", "Nope", stdout=StringIO())
    client.force_login(owner)
    page = client.get(f"/p/demo-project/agreement/?view={view.pk}")
    assert page.status_code == 200 and f'<option value="{view.pk}" selected>' in page.content.decode()
    assert client.get("/api/projects/demo-project/agreement/", {"view": "Nope"}).status_code == 400


def test_signatures_on_a_view_equal_the_same_filters(client, world, owner):
    from annotator.services.signatures import SignatureQuery
    from annotator.services.signatures.report import compute_report, with_view

    view = _save(world.project, owner, "Alpha", batch="alpha")
    access = ProjectAccess.of(owner, world.project)
    for source in ("gold", "union"):
        scoped, error = with_view(world.project, access, SignatureQuery(source), "Alpha")
        assert not error and scoped.view == (("batch", "alpha"),)
        by_view = compute_report(world.project, scoped).signatures
        by_filter = compute_report(world.project, SignatureQuery(source, batch=("alpha",))).signatures
        assert by_view == by_filter
    beta = _save(world.project, owner, "Beta", batch="beta")
    scoped, _ = with_view(world.project, access, SignatureQuery("union"), "Beta")
    assert compute_report(world.project, scoped).signatures != by_view  # not vacuous
    client.force_login(owner)
    assert client.get(f"/api/projects/demo-project/signatures/?view={view.pk}").status_code == 200
    missing = client.get("/api/projects/demo-project/signatures/?view=Nope")
    assert missing.status_code == 400 and "No saved view" in missing.json()["detail"]
    page = client.get(f"/p/demo-project/signatures/?view={beta.pk}").content.decode()
    assert f'<option value="{beta.pk}" selected>' in page
    out = StringIO()
    call_command("signatures", "demo-project", "--source", "union", "--view", "Beta", "--json", stdout=out)
    assert json.loads(out.getvalue())["source"] == "union"
