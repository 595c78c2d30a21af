"""export_dataset writes a folder that import_traces reads back elsewhere, traces and labels included."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import Annotation, Export
from annotator.services.imports import do_import_traces
from tests.factories import ProjectFactory, UserFactory, add_member
from traces.exports import stored_content_hash
from traces.importers import detect_source
from traces.models import Batch, Step, Trace


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def labels_of(project) -> set:
    return {
        (
            a.assignment.trace.external_id,
            a.assignment.annotator.username,
            a.no_failure,
            tuple(sorted((la.mode.code, tuple(la.evidence_steps), la.note) for la in a.labels.all())),
        )
        for a in Annotation.objects.filter(assignment__project=project, status="submitted")
    }


def test_an_exported_folder_imports_into_another_project_with_its_labels(labelled, mast, tmp_path):
    out = tmp_path / "published"
    output = run("export_dataset", labelled.slug, "--out", str(out), "--license", "cc0-1.0")
    assert (
        "traces 4 rows, annotations 4 rows, gold 2 rows" in output and f"Dataset written to {out}" in output
    )
    assert Export.objects.get().status == "succeeded" and Export.objects.get().path == str(out)
    assert detect_source(out) == "hf_export"

    # Another team, who cannot see the original batches, imports the published folder as its own traces.
    olga = UserFactory(username="olga")
    copy = ProjectFactory(taxonomy_version=mast, slug="copy")
    add_member(copy, olga, "owner")
    result, labels = do_import_traces([(out, "published")], batch_name="copy-1", user=olga, project=copy)
    assert (result.traces, result.steps, result.duplicates) == (4, 18, 0)
    assert labels.created == 4

    originals = {t.external_id: t for t in Trace.objects.filter(batch__name__in=["run-1", "run-2"])}
    for trace in Trace.objects.filter(batch__name="copy-1"):
        original = originals[trace.external_id]
        assert (trace.task, trace.model, trace.outcome, trace.score, trace.metadata) == (
            original.task,
            original.model,
            original.outcome,
            original.score,
            original.metadata,
        )
        assert trace.content_hash == stored_content_hash(original)  # the same content, whatever the container
        fields = ("index", "parent_index", "kind", "content", "tool_name", "tool_args", "tokens")
        assert list(Step.objects.filter(trace=trace).values_list(*fields)) == list(
            Step.objects.filter(trace=original).values_list(*fields)
        )
    # The published pseudonyms are raters of that dataset, never merged with anyone else's "annotator-1".
    pseudonymous = {
        (
            trace,
            {"ana-annotator": "published/annotator-1", "ben-annotator": "published/annotator-2"}[who],
            nothing,
            labels,
        )
        for trace, who, nothing, labels in labels_of(labelled)
    }
    assert labels_of(copy) == pseudonymous

    again, labels = do_import_traces([(out, "published")], batch_name="copy-1", user=olga, project=copy)
    assert (again.traces, again.duplicates, labels.created, labels.unchanged) == (0, 4, 0, 4)


def test_reimporting_an_exported_folder_into_the_same_database_adds_no_trace(labelled, tmp_path):
    for trace in Trace.objects.all():  # factories make up a hash; give the rows their real content key
        Trace.objects.filter(pk=trace.pk).update(content_hash=stored_content_hash(trace))
    out = tmp_path / "published"
    run("export_dataset", labelled.slug, "--out", str(out), "--license", "cc0-1.0")
    before = Trace.objects.count()
    output = run("import_traces", str(out), "--batch", "again", "--project", labelled.slug)
    assert Trace.objects.count() == before and "Nothing new" in output
    assert not Batch.objects.filter(name="again").exists()  # an import that adds nothing makes no batch


def test_a_hub_repo_id_reads_the_same_configs(labelled, tmp_path, monkeypatch):
    """hf://owner/name goes to `datasets` with the repo id; here `datasets` is pointed at the exported folder."""
    import datasets

    out = tmp_path / "published"
    run("export_dataset", labelled.slug, "--out", str(out))
    asked = []
    real_load, real_configs = datasets.load_dataset, datasets.get_dataset_config_names

    def load(path, name=None, **kwargs):
        asked.append((path, name))
        return real_load(str(out) if path == "olivia/mast-labels" else path, name, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", load)
    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda repo, **kw: real_configs(str(out)))
    assert detect_source("hf://olivia/mast-labels") == "hf_export"
    output = run("import_traces", "hf://olivia/mast-labels", "--batch", "from-hub")
    assert "hf://olivia/mast-labels: hf_export, 4 traces" in output
    assert ("olivia/mast-labels", "annotations") in asked and ("olivia/mast-labels", "traces") in asked


def test_the_cli_refuses_a_full_folder_a_bad_batch_and_a_push_without_token(labelled, tmp_path, monkeypatch):
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    with pytest.raises(CommandError, match="not an empty folder"):
        run("export_dataset", labelled.slug, "--out", str(full))
    with pytest.raises(CommandError, match="batch 'nope' is not in this project"):
        run("export_dataset", labelled.slug, "--out", str(tmp_path / "a"), "--batch", "nope")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(CommandError, match="HF_TOKEN"):
        run("export_dataset", labelled.slug, "--out", str(tmp_path / "b"), "--push-to-hub", "olivia/x")
    assert not Export.objects.exists()


def test_the_cli_pushes_with_the_environment_token(labelled, tmp_path, hub, settings, monkeypatch):
    settings.HF_ENDPOINT = hub.url
    monkeypatch.setenv("HF_TOKEN", "hf_fromTheEnvironment123")
    out = tmp_path / "pushed"
    output = run(
        "export_dataset",
        labelled.slug,
        "--out",
        str(out),
        "--push-to-hub",
        "olivia/mast",
        "--private",
        "--gold-only",
    )
    assert f"Published: {hub.url}/datasets/olivia/mast/commit/" in output
    assert set(hub.files("olivia/mast")) == {
        "README.md",
        "taxonomy.yaml",
        "traces/train-00000.parquet",
        "gold/train-00000.parquet",
    }
    assert hub.repos["olivia/mast"]["private"] is True
    hub.fail["commit"] = 403
    with pytest.raises(CommandError, match="may not write to 'olivia/mast'"):
        run("export_dataset", labelled.slug, "--out", str(tmp_path / "again"), "--push-to-hub", "olivia/mast")
