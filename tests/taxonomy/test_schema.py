"""Tests for the taxonomy file format and the built-in taxonomies.

Pure: no database and no Django, so they run with ``-p no:django``. The MAST alias test
reads the real released human-labelled data, because the whole point of the aliases is
that every label in that file maps to the intended final mode.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from taxonomy.schema import (
    ModeSpec,
    TaxonomyFileError,
    TaxonomySpec,
    builtin_paths,
    dump_taxonomy,
    load_taxonomy_file,
    parse_taxonomy,
    resolve_mode,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MAD_FILE = REPO_ROOT.parent / "shared" / "datasets" / "mast" / "MAD_human_labelled_dataset.json"

# Every label name (numbers stripped) in MAD_human_labelled_dataset.json, across all four
# annotation rounds, and the final MAST mode it must resolve to. None: retired mode with
# no successor; deliberately unmapped (see the description in mast.yaml).
MAD_LABELS: dict[str, str | None] = {
    "Poor task constraint compliance": "FM-1.1",
    "Disobey Task Specification": "FM-1.1",
    "Disobey role specification": "FM-1.2",
    "Step repetition": "FM-1.3",
    "Backtracking interruption": "FM-1.4",
    "Loss of Conversation History": "FM-1.4",
    "Unaware of stopping conditions": "FM-1.5",
    "Unaware of Termination Conditions": "FM-1.5",
    "Conversation reset": "FM-2.1",
    "Fail to elicit clarification": "FM-2.2",
    "Fail to ask for clarification": "FM-2.2",
    "Derailment from task": "FM-2.3",
    "Task derailment": "FM-2.3",
    "Withholding relevant information": "FM-2.4",
    "Information Witholding": "FM-2.4",
    "Ignoring suggestions from agents": "FM-2.5",
    "Ignored Other Agents' Input": "FM-2.5",
    "Inconsistency between reasoning and action": "FM-2.6",
    "Reasoning-Action Mismatch": "FM-2.6",
    "Ill specified termination condition leading to premature termination": "FM-3.1",
    "Premature Termination": "FM-3.1",
    "Lack of critical verification": "FM-3.2",
    "No or Incomplete Verification": "FM-3.2",
    "Lack of result verification": "FM-3.3",
    "Incorrect Verification": "FM-3.3",
    "Undetected conversation ambiguities and contradictions": None,
    "Unbatched repetitive execution": None,
    "Disagreement induced inaction": None,
    "Waiting for known information": None,
}


def _builtin(slug: str) -> TaxonomySpec:
    return load_taxonomy_file(next(p for p in builtin_paths() if p.stem == slug))


def _minimal() -> dict[str, Any]:
    return {
        "slug": "demo",
        "name": "Demo",
        "labelling_mode": "multi_label",
        "categories": [
            {
                "code": "C1",
                "name": "First",
                "modes": [
                    {"code": "FM-1.1", "name": "Alpha", "definition": "A."},
                    {"code": "FM-1.2", "name": "Beta", "definition": "B.", "aliases": ["Old beta"]},
                    {"code": "FM-1.3", "name": "Gamma", "definition": "C."},
                ],
            },
            {
                "code": "C2",
                "name": "Second",
                "modes": [{"code": "FM-2.1", "name": "Delta", "definition": "D."}],
            },
        ],
    }


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(TaxonomyFileError) as info:
        parse_taxonomy(data)
    return str(info.value)


# --------------------------------------------------------------------------- built-ins


def test_builtin_paths_lists_the_shipped_files_sorted() -> None:
    assert [p.name for p in builtin_paths()] == [
        "agent-failures-6.yaml",
        "decisive-error.yaml",
        "kami.yaml",
        "mast.yaml",
    ]


@pytest.mark.parametrize("path", builtin_paths(), ids=lambda p: p.stem)
def test_builtin_parses_round_trips_and_is_documented(path: Path, tmp_path: Path) -> None:
    spec = load_taxonomy_file(path)
    assert spec.slug == path.stem
    assert spec.citation
    assert parse_taxonomy(dump_taxonomy(spec)) == spec
    as_yaml = tmp_path / "t.yaml"
    as_yaml.write_text(yaml.safe_dump(dump_taxonomy(spec), sort_keys=False, allow_unicode=True))
    as_json = tmp_path / "t.json"
    as_json.write_text(json.dumps(dump_taxonomy(spec)))
    assert load_taxonomy_file(as_yaml) == spec == load_taxonomy_file(as_json)
    for mode in spec.all_modes():  # annotators rely on all three
        assert len(re.findall(r"[.!?](\s|$)", mode.definition)) >= 1, mode.code
        assert mode.guidance, mode.code
        assert mode.examples, mode.code


def test_mast_has_fourteen_modes_in_three_categories() -> None:
    spec = _builtin("mast")
    assert spec.labelling_mode == "multi_label"
    assert [c.code for c in spec.categories] == ["FC1", "FC2", "FC3"]
    assert [len(c.modes) for c in spec.categories] == [5, 6, 3]
    codes = [m.code for m in spec.all_modes()]
    expected = [f"FM-1.{i}" for i in range(1, 6)] + [f"FM-2.{i}" for i in range(1, 7)]
    assert codes == [*expected, "FM-3.1", "FM-3.2", "FM-3.3"]
    assert all(m.category_code == f"FC{m.code[3]}" and m.parent_code is None for m in spec.all_modes())
    fatal = {m.code for m in spec.all_modes() if m.fatal}
    assert {"FM-3.1", "FM-3.2", "FM-3.3"} <= fatal
    assert "FM-1.3" not in fatal  # step repetition is the known benign mode
    assert "arXiv:2503.13657" in spec.citation


def test_six_mode_taxonomy_is_single_primary_with_seven_modes_and_nine_subtypes() -> None:
    spec = _builtin("agent-failures-6")
    assert spec.labelling_mode == "single_primary"
    modes = spec.all_modes()
    top = [m for m in modes if m.parent_code is None]
    assert [m.code for m in top] == [f"AF-{i}" for i in range(1, 8)]
    subtypes = {m.name.lower(): m.parent_code for m in modes if m.parent_code}
    assert subtypes == {
        "hallucinated tool argument": "AF-1",
        "wrong tool": "AF-1",
        "wrong argument": "AF-1",
        "fabricated function": "AF-3",
        "wrong file path": "AF-3",
        "stale api": "AF-3",
        "fake completion": "AF-5",
        "wrong-target completion": "AF-5",
        "partial work reported complete": "AF-5",
    }
    slugs = {
        "tool-misuse": "AF-1",
        "hallucinated-tool-argument": "AF-1a",
        "planning-drift": "AF-2",
        "context-hallucination": "AF-3",
        "stale-api": "AF-3c",
        "environment-brittleness": "AF-4",
        "silent-success": "AF-5",
        "wrong-target-completion": "AF-5b",
        "safety-refusal": "AF-6",
        "other": "AF-7",
    }
    assert {s: resolve_mode(spec, s).code for s in slugs} == slugs  # type: ignore[union-attr]


def test_kami_has_four_archetypes() -> None:
    spec = _builtin("kami")
    assert spec.labelling_mode == "multi_label"
    assert [m.code for m in spec.all_modes()] == ["KAMI-1", "KAMI-2", "KAMI-3", "KAMI-4"]
    assert "2512.07497" in spec.citation


def test_all_modes_puts_parents_before_subtypes_and_numbers_them() -> None:
    modes = _builtin("agent-failures-6").all_modes()
    assert [m.order for m in modes] == list(range(len(modes)))
    position = {m.code: i for i, m in enumerate(modes)}
    assert all(position[m.parent_code] < position[m.code] for m in modes if m.parent_code)
    assert all(m.category_code == "AF" for m in modes)


# --------------------------------------------------------------------------- resolve_mode


@pytest.mark.parametrize(
    ("label", "code"),
    [
        ("FM-2.5", "FM-2.5"),
        ("fm 2.5", "FM-2.5"),
        ("Ignored other agent's input", "FM-2.5"),
        ("  IGNORED OTHER AGENTS INPUT ", "FM-2.5"),
        ("Ignoring suggestions from agents", "FM-2.5"),
        ("3.3 Ignoring suggestions from agents", "FM-2.5"),  # round-1 number, ignored
        ("FM-2.5: Ignored other agent's input", "FM-2.5"),
        ("2.2 Fail to elicit clarification\n(between agents)\nInability to ...", "FM-2.2"),
        ("1.4", "FM-1.4"),  # final numbering, as in MAD LLM-judge annotations
        ("Waiting for known information", None),
        ("1.1 FM-1.3", None),
        ("", None),
    ],
)
def test_resolve_mode_matches_code_name_and_alias_loosely(label: str, code: str | None) -> None:
    mode = resolve_mode(_builtin("mast"), label)
    assert (mode.code if mode else None) == code


def _mad_headings() -> dict[str, list[str]]:
    if not MAD_FILE.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{MAD_FILE} is missing on CI")
        pytest.skip(f"{MAD_FILE} not available")
    records = json.loads(MAD_FILE.read_text(encoding="utf-8"))  # bare NaN: json accepts it
    keys: dict[str, list[str]] = {}
    for record in records:
        for annotation in record["annotations"]:
            keys.setdefault(annotation["failure mode"], []).append(record["round"])
    return keys


def test_every_label_in_the_released_mast_data_resolves_as_documented() -> None:
    spec = _builtin("mast")
    keys = _mad_headings()
    assert len(keys) > 40
    expected = {name.casefold(): code for name, code in MAD_LABELS.items()}  # rounds differ in case
    for key in keys:
        heading = key.splitlines()[0].strip()
        name = re.sub(r"^\d+\.\d+\s+", "", heading).casefold()
        assert name in expected, f"new label in MAD data, map it in mast.yaml: {heading!r}"
        mode = resolve_mode(spec, key)
        assert (mode.code if mode else None) == expected[name], heading
    retired = [name for name, code in MAD_LABELS.items() if code is None]
    assert all(name in spec.description for name in retired)


def test_mast_aliases_agree_with_the_evidence_inside_the_data() -> None:
    """Labels with the same definition text are one mode under different names; a final
    label whose text opens with an old name renames that old mode."""
    spec = _builtin("mast")
    by_body: dict[str, set[str | None]] = {}
    renames = 0
    for key in _mad_headings():
        heading, _, body = key.partition("\n")
        mode = resolve_mode(spec, heading)
        code = mode.code if mode else None
        by_body.setdefault(" ".join(body.split()), set()).add(code)
        old = resolve_mode(spec, body)  # first line of the body: an old name, or prose
        if old is not None:
            assert old.code == code, heading
            renames += 1
    assert renames == 4  # 2.6, 3.1, 3.2 and 3.3 of the final round
    assert all(len(codes) == 1 for codes in by_body.values()), by_body


# --------------------------------------------------------------------------- errors


def test_missing_definition_names_the_field() -> None:
    data = _minimal()
    del data["categories"][1]["modes"][0]["definition"]
    assert _error(data) == "categories[1].modes[0].definition: required"


def test_duplicate_code_names_the_field() -> None:
    data = _minimal()
    data["categories"][0]["modes"][1]["code"] = "fm-1.3"  # codes compare case-insensitively
    assert _error(data) == (
        "categories[0].modes[2].code: duplicate code 'FM-1.3' (clashes with categories[0].modes[1].code)"
    )


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.update(labelling_mode="multi"), "labelling_mode: must be one of"),
        (lambda d: d.update(colour="red"), "colour: unknown key"),
        (lambda d: d["categories"][0]["modes"][0].update(defintion="x"), "modes[0].defintion: unknown key"),
        (lambda d: d.update(name=5), "name: expected a string, got int"),
        (lambda d: d.update(version=1.0), "version: expected a string, got float (quote it"),
        (lambda d: d.update(modes="FM-9"), "modes: expected a list, got str"),
        (lambda d: d["categories"][0].update(modes={}), "categories[0].modes: expected a list"),
        (lambda d: d["categories"][1]["modes"][0].update(fatal="yes"), "modes[0].fatal: expected true or"),
        (lambda d: d["categories"][1]["modes"][0].update(examples=[""]), "modes[0].examples[0]:"),
        (lambda d: d["categories"].append("C3"), "categories[2]: expected a mapping, got str"),
        (lambda d: d.update(slug="Demo Taxonomy"), "slug: invalid slug"),
        (lambda d: d.pop("labelling_mode"), "labelling_mode: required"),
        (lambda d: d["categories"][1]["modes"][0].update(code="FM 2.1"), "modes[0].code: invalid code"),
        (lambda d: d["categories"][1].update(code="c1"), "categories[1].code: duplicate category code"),
        (lambda d: d["categories"][1]["modes"][0].update(name="ALPHA"), "modes[0].name: duplicate name"),
        (
            lambda d: d["categories"][1]["modes"][0].update(aliases=["old-beta"]),
            "aliases[0]: duplicate alias",
        ),
        (lambda d: d["categories"][1]["modes"][0].update(aliases=["gamma"]), "aliases[0]: duplicate alias"),
        (lambda d: d["categories"][0]["modes"][1].update(aliases=["beta!"]), "aliases[0]: redundant alias"),
        (lambda d: d["categories"][0]["modes"][0].update(subtypes=[{"code": "X"}]), "subtypes[0].name: req"),
        (lambda d: d.update(categories=[]), "modes: a taxonomy needs at least one mode"),
        (lambda d: d.update(source_url="arxiv.org/abs/1"), "source_url: expected an http(s) URL"),
    ],
)
def test_malformed_input_names_the_field(mutate: Any, expected: str) -> None:
    data = copy.deepcopy(_minimal())
    mutate(data)
    assert expected in _error(data)


def test_root_must_be_a_mapping() -> None:
    with pytest.raises(TaxonomyFileError, match=r"^<root>: expected a mapping, got list"):
        parse_taxonomy([])  # type: ignore[arg-type]


def test_top_level_modes_and_subtypes_parse() -> None:
    data = {
        "slug": "flat",
        "name": "Flat",
        "labelling_mode": "single_primary",
        "modes": [
            {
                "code": "A",
                "name": "A mode",
                "definition": "A.",
                "subtypes": [{"code": "A1", "name": "A one", "definition": "x"}],
            },
            {"code": "B", "name": "B mode", "definition": "B.", "fatal": True},
        ],
    }
    spec = parse_taxonomy(data)
    assert [(m.code, m.parent_code, m.category_code, m.order) for m in spec.all_modes()] == [
        ("A", None, None, 0),
        ("A1", "A", None, 1),
        ("B", None, None, 2),
    ]
    assert dump_taxonomy(spec) == {**data, "version": "1.0"}
    assert spec.mode("A1") == ModeSpec(code="A1", name="A one", definition="x", parent_code="A", order=1)


def test_yaml_syntax_error_reports_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("slug: demo\nname: Demo\n  labelling_mode: multi_label\nmodes: []\n")
    with pytest.raises(TaxonomyFileError, match=r"^broken\.yaml: line 3, column \d+: invalid YAML"):
        load_taxonomy_file(path)


def test_yaml_duplicate_key_is_an_error_not_a_silent_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "dup.yml"
    path.write_text("slug: demo\nname: Demo\nname: Other\nlabelling_mode: multi_label\n")
    with pytest.raises(TaxonomyFileError, match=r"line 3, column 1: invalid YAML: duplicate key 'name'"):
        load_taxonomy_file(path)


def test_json_file_by_extension_or_content_and_errors_name_file_and_field(tmp_path: Path) -> None:
    data = _minimal()
    (tmp_path / "t.json").write_text(json.dumps(data))
    (tmp_path / "t.taxonomy").write_text(json.dumps(data, indent=2))
    assert load_taxonomy_file(tmp_path / "t.json") == load_taxonomy_file(tmp_path / "t.taxonomy")
    (tmp_path / "bad.json").write_text('{"slug": "demo",\n "name": }')
    with pytest.raises(TaxonomyFileError, match=r"^bad\.json: line 2, column \d+: invalid JSON"):
        load_taxonomy_file(tmp_path / "bad.json")
    del data["categories"][0]["modes"][1]["definition"]
    (tmp_path / "nodef.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(TaxonomyFileError) as info:
        load_taxonomy_file(tmp_path / "nodef.yaml")
    assert str(info.value) == "nodef.yaml: categories[0].modes[1].definition: required"
    assert info.value.field == "categories[0].modes[1].definition"
