"""The page, its htmx partial and CSVs, the JSON API (and its OpenAPI entry) and the command, on the gold
world of tests/signatures/world.py: the same numbers everywhere."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

pytestmark = pytest.mark.django_db

PAGE = "/p/demo-project/signatures/"
API = "/api/projects/demo-project/signatures/"


@pytest.fixture
def owner_client(client, gold_people):
    client.force_login(gold_people.owner)
    return client


def test_the_page_shows_every_figure_in_few_queries(owner_client, django_assert_max_num_queries):
    # 18 queries whatever the number of traces (2 session and user, 2 access, 4 data version lookups (the
    # newest outcomes import among them),
    # 3 arrays, 1 evidence, 2 filter choices and 3 lookups of their versions, 1 of the modes the stored
    # counts are for), plus the savepoint and SET LOCAL jit and work_mem around the reads on PostgreSQL;
    # asked again, the page answers from the stored figures and filter choices (lookups only: no arrays,
    # no evidence, no scan).
    with django_assert_max_num_queries(18 if connection.vendor == "sqlite" else 22):
        owner_client.get(f"{PAGE}?compare_a=before&compare_b=after")
    with django_assert_max_num_queries(11):  # the data version (4 lookups) says nothing changed
        response = owner_client.get(f"{PAGE}?compare_a=before&compare_b=after")
    html = response.content.decode()
    assert response.status_code == 200
    for section in (
        "prevalence",
        "benign-fatal",
        "modes-per-trace",
        "cooccurrence",
        "positions",
        "comparison",
    ):
        assert f'id="{section}"' in html
    assert "<b>80</b>" in html  # traces analysed
    assert "only in failures" in html and "verdict-fatal" in html and "verdict-benign" in html
    assert "+400%" in html  # FM-3.3: (0.5 - 0.1) / 0.1
    assert "/p/demo-project/signatures/benign_fatal.csv?compare_a=before&amp;compare_b=after" in html
    assert "before → after" in html


def test_the_filter_form_swaps_only_the_figures_with_htmx(owner_client):
    response = owner_client.get(f"{PAGE}?model=claude", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'id="signatures-body"' in html
    assert "<html" not in html and "sig-filters" not in html
    assert "<b>40</b>" in html


def test_the_project_page_links_to_the_signatures(owner_client):
    assert b'href="/p/demo-project/signatures/"' in owner_client.get("/p/demo-project/").content


def test_an_empty_selection_says_what_to_do(owner_client):
    html = owner_client.get(f"{PAGE}?model=nobody").content.decode()
    assert (
        "No gold labels yet: adjudicate, or choose the union of annotators as source or clear the filters."
        in html
    )
    html = owner_client.get(f"{PAGE}?source=agreed").content.decode()
    assert "agreed labels need at least two annotators per trace" in html


def test_the_csv_has_the_numbers_behind_the_chart(owner_client):
    response = owner_client.get("/p/demo-project/signatures/benign_fatal.csv")
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="demo-project-benign_fatal-gold.csv"'
    rows = {row["code"]: row for row in csv.DictReader(io.StringIO(response.content.decode()))}
    assert rows["FM-3.3"]["failed_with_mode"] == "20" and rows["FM-3.3"]["failed_traces"] == "40"
    assert rows["FM-3.3"]["relative_increase"] == "4.0" and rows["FM-3.3"]["classification"] == "fatal"
    assert (
        rows["FM-1.5"]["relative_increase"] == ""
        and rows["FM-1.5"]["relative_increase_note"] == "only in failures"
    )
    assert rows["FM-1.3"]["classification"] == "benign" and rows["FM-1.3"]["warnings"] == "intervals_overlap"
    empty = owner_client.get("/p/demo-project/signatures/vectors.csv?model=nobody").content.decode()
    assert empty == "rank,modes,traces,failed_traces,share_of_traces_with_modes\r\n"


def test_the_api_returns_the_same_numbers(owner_client):
    data = owner_client.get(f"{API}?model=gpt-4o&model=claude&compare_a=before&compare_b=after").json()
    assert (data["source"], data["filters"], data["compare"]) == (
        "gold",
        {"model": ["gpt-4o", "claude"]},
        ["before", "after"],
    )
    figures = data["figures"]
    assert (figures["n_traces"], figures["n_failed"], figures["n_successful"]) == (80, 40, 40)
    contrast = {row["key"]: row for row in figures["contrast"]["modes"]}
    assert contrast["FM-1.5"]["relative_increase"] == {
        "value": None,
        "undefined_code": "never_in_successes",
        "undefined_reason": "only in failures",
    }
    assert contrast["FM-3.3"]["in_failed"]["count"] == 20
    assert figures["positions"]["deciles"] == [0, 0, 18, 6, 0, 8, 0, 0, 0, 24]
    assert figures["vectors"]["top"][0] == {"modes": ["FM-3.3"], "count": 12, "n_failed": 8, "share": 12 / 36}
    change = {row["key"]: row for row in figures["comparison"]["modes"]}
    assert change["FM-3.3"]["difference"]["value"] == pytest.approx(-0.2)


def test_the_api_answers_an_empty_selection_with_a_message(owner_client):
    data = owner_client.get(f"{API}?source=union").json()
    assert data["figures"] is None
    assert data["empty_message"] == "No submitted annotations yet: label some traces."


def test_the_openapi_schema_documents_the_endpoint_and_its_filters(owner_client):
    schema = owner_client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/projects/{slug}/signatures/"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"slug", "source", "batch", "model", "system", "benchmark", "compare_a", "compare_b"} <= names
    assert "SignatureReport" in json.dumps(operation["responses"]["200"])


def run(*args) -> str:
    out = io.StringIO()
    call_command("signatures", "demo-project", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_text_json_and_csv(gold_people):
    text = run("--compare", "before", "after")
    assert text.startswith("80 traces (40 failed, 40 successful, 0 unknown), labels from gold")
    assert "BENIGN OR FATAL" in text and "only in failures" in text and "COMPARISON before (n=40)" in text
    data = json.loads(run("--json", "--model", "claude"))
    assert data["figures"]["n_traces"] == 40 and data["filters"] == {"model": ["claude"]}
    vectors = list(csv.reader(io.StringIO(run("--csv", "vectors", "--benchmark", "swe"))))
    assert vectors == [
        ["rank", "modes", "traces", "failed_traces", "share_of_traces_with_modes"],
        ["1", "FM-1.3 + FM-3.3", "6", "6", "0.6"],
        ["2", "FM-1.3", "4", "0", "0.4"],
    ]


def test_the_command_explains_bad_input(gold_people):
    with pytest.raises(CommandError, match="Unknown source"):
        run("--source", "silver")
    with pytest.raises(CommandError, match="No project"):
        call_command("signatures", "no-such-project")
    err = io.StringIO()
    call_command("signatures", "demo-project", "--source", "union", stdout=io.StringIO(), stderr=err)
    assert "No submitted annotations yet" in err.getvalue()
