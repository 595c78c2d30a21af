"""Attribution as data: a Who&When attribution (agent, step, reason) is stored as given on the imported
label, the import reports every record whose attributed agent did not speak the attributed step, and the
signatures count evidence both by the evidence step's agent and by the attributed agent."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotator.models import LabelApplication
from annotator.services.signatures import SignatureQuery, project_signatures
from annotator.signatures.tables import figure_table
from annotator.signatures.text import render_text
from taxonomy.services import resolve_version
from tests.factories import ProjectFactory
from tests.services import datasets_dir
from traces.importers import iter_records
from traces.models import Batch

# Shaped like Who&When Hand-Crafted/22: the file blames FileSurfer for step 4, which WebSurfer spoke.
CONTRADICTORY = {
    "history": [
        {"content": "What is in the PDF?", "role": "human"},
        {"content": "Plan: open it.", "role": "Orchestrator (thought)"},
        {"content": "Open the PDF.", "role": "Orchestrator (-> WebSurfer)"},
        {"content": "I typed the address.", "role": "WebSurfer"},
        {"content": "The page says 404.", "role": "WebSurfer"},
        {"content": "Read the file.", "role": "Orchestrator (-> FileSurfer)"},
        {"content": "Cannot read it.", "role": "FileSurfer"},
    ],
    "question": "What is in the PDF?",
    "is_corrected": False,
    "mistake_agent": "FileSurfer",
    "mistake_step": "4",
    "mistake_reason": "Gave up on the file.",
}
CONSISTENT = {**CONTRADICTORY, "question": "Another run", "mistake_agent": "WebSurfer"}


def write(folder: Path, name: str, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data))
    return folder / name


def import_traces(*args: str) -> str:
    out = StringIO()
    call_command("import_traces", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def decisive(taxonomies):
    return ProjectFactory(taxonomy_version=resolve_version("decisive-error"), slug="who-failed")


def test_the_parser_keeps_the_attribution_as_given(tmp_path):
    (record,) = iter_records(write(tmp_path / "Hand-Crafted", "22.json", CONTRADICTORY))
    (label,) = record.annotations[0].labels
    assert label.attribution == {"agent": "FileSurfer", "step": 4, "reason": "Gave up on the file."}
    assert record.steps[4].agent == "WebSurfer"


def test_the_import_stores_the_attribution_and_reports_the_contradiction(decisive, tmp_path):
    folder = tmp_path / "Hand-Crafted"
    write(folder, "22.json", CONTRADICTORY)
    write(folder, "23.json", CONSISTENT)
    output = import_traces(str(folder), "--batch", "ww", "--project", decisive.slug)
    assert "1 attribution names another agent than the one who spoke the attributed step" in output
    assert (
        "trace 'Hand-Crafted/22': the attribution names 'FileSurfer', but step 4 was spoken by 'WebSurfer'"
        in output
    )
    assert not [line for line in output.splitlines() if "Hand-Crafted/23'" in line]
    stored = LabelApplication.objects.get(annotation__assignment__trace__external_id="Hand-Crafted/22")
    assert stored.attribution == {"agent": "FileSurfer", "step": 4, "reason": "Gave up on the file."}
    assert stored.evidence_steps == [4]


def test_import_annotations_reports_the_contradiction_too(decisive, tmp_path):
    folder = tmp_path / "Hand-Crafted"
    path = write(folder, "22.json", CONTRADICTORY)
    import_traces(str(path), "--batch", "ww")
    decisive.batches.add(*Batch.objects.all())
    out = StringIO()
    call_command("import_annotations", str(path), "--project", decisive.slug, stdout=out)
    assert "the attribution names 'FileSurfer', but step 4 was spoken by 'WebSurfer'" in out.getvalue()


def test_signatures_count_by_attributed_agent_beside_the_step_agent(decisive, tmp_path):
    folder = tmp_path / "Hand-Crafted"
    write(folder, "22.json", CONTRADICTORY)
    write(folder, "23.json", CONSISTENT)
    import_traces(str(folder), "--batch", "ww", "--project", decisive.slug)
    signatures = project_signatures(decisive, SignatureQuery(source="union"))
    positions = signatures.positions
    assert [(a.agent, a.count) for a in positions.agents] == [("WebSurfer", 2)]
    assert [(a.agent, a.count) for a in positions.attributed_agents] == [("FileSurfer", 1), ("WebSurfer", 1)]
    assert positions.n_attributed == 2
    header, rows = figure_table(signatures, "attributed_agents")
    assert header[:2] == ("attributed_agent", "evidence_steps") and [r[:2] for r in rows] == [
        ("FileSurfer", 1),
        ("WebSurfer", 1),
    ]
    text = render_text(signatures, "union")
    assert "EVIDENCE BY ATTRIBUTED AGENT" in text and "EVIDENCE BY THE EVIDENCE STEP'S AGENT" in text


def test_labels_made_here_carry_no_attribution_figure(project, tmp_path):
    record = {
        "id": "here",
        "steps": [{"agent": "planner", "content": "plan"}, {"agent": "coder", "content": "code"}],
        "annotations": [{"annotator": "rater", "labels": [{"mode": "FM-1.3", "steps": [1]}]}],
    }
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(record) + "\n")
    import_traces(str(path), "--batch", "n", "--project", project.slug)
    positions = project_signatures(project, SignatureQuery(source="union")).positions
    assert [(a.agent, a.count) for a in positions.agents] == [("coder", 1)]
    assert positions.n_attributed == 0 and positions.attributed_agents == ()
    assert LabelApplication.objects.get().attribution == {}


def _spoken_by(entry: dict) -> str:
    # Independent of the parser: AG2 names the speaker; Magentic-One puts it in `role`, maybe qualified.
    return entry.get("name") or entry["role"].split(" (")[0]


def test_every_contradiction_in_the_real_files_is_reported_and_no_other(taxonomies):
    root = datasets_dir() / "who_and_when"
    expected = set()
    for path in sorted(root.glob("*/*.json")):
        raw = json.loads(path.read_text())
        step = int(raw["mistake_step"])
        if _spoken_by(raw["history"][step]).casefold() != raw["mistake_agent"].casefold():
            expected.add(f"{path.parent.name}/{path.stem}")
    project = ProjectFactory(taxonomy_version=resolve_version("decisive-error"))
    output = import_traces(str(root), "--batch", "ww", "--project", project.slug)
    reported = {line.split("'")[1] for line in output.splitlines() if "the attribution names" in line}
    assert reported == expected
    if (root / "Hand-Crafted" / "22.json").exists():
        assert "Hand-Crafted/22" in reported


def test_the_signatures_page_and_api_offer_the_attributed_agent(client, decisive, owner, tmp_path):
    from tests.factories import add_member

    add_member(decisive, owner, "owner")
    folder = tmp_path / "Hand-Crafted"
    write(folder, "22.json", CONTRADICTORY)
    import_traces(str(folder), "--batch", "ww", "--project", decisive.slug)
    client.force_login(owner)
    html = client.get(f"/p/{decisive.slug}/signatures/?source=union").content.decode()
    assert "By the evidence step&#x27;s agent" in html or "By the evidence step's agent" in html
    assert 'id="attributed-agents"' in html and "FileSurfer" in html
    assert f"/p/{decisive.slug}/signatures/attributed_agents.csv" in html
    body = client.get(f"/api/projects/{decisive.slug}/signatures/?source=union").json()
    positions = body["figures"]["positions"]
    assert [a["agent"] for a in positions["attributed_agents"]] == ["FileSurfer"]


def test_an_attribution_in_the_labels_jsonl_is_stored_and_checked(decisive, tmp_path):
    path = write(
        tmp_path / "Hand-Crafted", "22.json", {**CONTRADICTORY, "mistake_agent": "", "mistake_step": ""}
    )
    import_traces(str(path), "--batch", "ww", "--project", decisive.slug)
    labels = tmp_path / "labels.jsonl"
    attribution = {"agent": "FileSurfer", "step": 4, "reason": "a team's own reading"}
    labels.write_text(
        json.dumps(
            {
                "trace": "Hand-Crafted/22",
                "annotator": "team",
                "labels": [{"mode": "DE-1", "steps": [4], "attribution": attribution}],
            }
        )
        + "\n"
    )
    out = StringIO()
    call_command("import_annotations", str(labels), "--project", decisive.slug, stdout=out)
    assert (
        "labels.jsonl, line 1: the attribution names 'FileSurfer', but step 4 was spoken by 'WebSurfer'"
        in out.getvalue()
    )
    stored = LabelApplication.objects.get(annotation__assignment__annotator__username="labels/team")
    assert stored.attribution == attribution
    labels.write_text(
        json.dumps({"trace": "x", "annotator": "t", "labels": [{"mode": "DE-1", "attribution": {"who": 1}}]})
        + "\n"
    )
    with pytest.raises(Exception, match=r"line 1, field 'labels\[0\]\.attribution'"):
        call_command("import_annotations", str(labels), "--project", decisive.slug, stdout=StringIO())


def test_the_upload_page_lists_the_contradiction(client, decisive, owner, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotator.models import ImportJob
    from tests.factories import add_member

    add_member(decisive, owner, "owner")
    client.force_login(owner)
    upload = SimpleUploadedFile("22.json", json.dumps(CONTRADICTORY).encode())
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/p/{decisive.slug}/import/", {"batch": "b", "files": [upload]}, HTTP_HX_REQUEST="true")
    job = ImportJob.objects.get()
    assert job.status == "succeeded"
    page = client.get(f"/p/{decisive.slug}/import/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "1 attribution names another agent" in page
    assert (
        "the attribution names &#x27;FileSurfer&#x27;, but step 4 was spoken by &#x27;WebSurfer&#x27;" in page
    )
