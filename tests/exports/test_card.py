"""The dataset card: a YAML header that parses (PyYAML and huggingface_hub), sections written from the data."""

from __future__ import annotations

import yaml

from annotator.services import reports
from annotator.services.exports import ExportOptions, build_export
from annotator.services.exports.card import size_category
from taxonomy.models import FailureMode


def card_of(project, tmp_path, **options) -> str:
    folder = tmp_path / "card"
    build_export(project, ExportOptions(**options), folder)
    return (folder / "README.md").read_text()


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card[4 : card.index("\n---\n", 4)])


def test_the_header_parses_and_points_at_every_config(labelled, tmp_path):
    from huggingface_hub import DatasetCard

    card = card_of(labelled, tmp_path, license="cc-by-sa-4.0", pretty_name="MAST relabelled")
    meta = front_matter(card)
    assert meta["pretty_name"] == "MAST relabelled" and meta["license"] == "cc-by-sa-4.0"
    assert meta["size_categories"] == ["n<1K"] and "trace-annotator" in meta["tags"]
    assert meta["task_categories"] == ["text-classification"]
    assert [(c["config_name"], c["data_files"][0]["path"]) for c in meta["configs"]] == [
        ("traces", "traces/train-*.parquet"),
        ("annotations", "annotations/train-*.parquet"),
        ("gold", "gold/train-*.parquet"),
    ]
    parsed = DatasetCard(card)
    assert parsed.data.license == "cc-by-sa-4.0" and parsed.data.pretty_name == "MAST relabelled"


def test_it_has_every_definition_the_agreement_table_and_the_counts(labelled, tmp_path):
    card = card_of(labelled, tmp_path)
    modes = FailureMode.objects.filter(version=labelled.taxonomy_version)
    assert modes.count() == 14
    for mode in modes:
        assert f"**{mode.code} {mode.name}**" in card
        assert " ".join(mode.definition.split()) in card
    agreement = card[card.index("## Inter-annotator agreement") : card.index("## Label counts")]
    assert "| mode | name | traces | Cohen's κ | 95% CI | observed | AC1 | PABAK | prevalence |" in agreement
    assert "| FM-1.1 | Disobey task specification | 2 | 1.000 |" in agreement
    assert "| FM-1.2 | Disobey role specification | 2 | undefined (no variation) |" in agreement
    assert "Why Do Multi-Agent LLM Systems Fail?" in card  # the taxonomy's citation
    assert "| FM-1.1 | Disobey task specification | 2 | 1 | 1 |" in card  # annotations, traces, gold
    assert "| gpt-4o | 2 | FM-1.1 (1), FM-2.2 (1) |" in card
    assert "Blind: yes" in card and "pseudonyms" in card
    assert "ana-annotator" not in card and "ben-annotator" not in card


def test_without_an_agreement_report_the_card_says_so(labelled, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("statistics service down")

    monkeypatch.setattr(reports, "do_request_report", broken)
    card = card_of(labelled, tmp_path)
    assert (
        "No agreement report: the agreement report could not be computed (statistics service down)." in card
    )
    assert "No agreement statistics: treat the labels as unvalidated." in card


def test_size_categories_follow_the_hub_buckets():
    assert [size_category(n) for n in (0, 999, 1000, 50_000, 999_999, 2_000_000)] == [
        "n<1K",
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "100K<n<1M",
        "1M<n<10M",
    ]
