"""Deriving a new taxonomy version by changes (pure, no database): each kind of change, the mapping from old
codes to new ones it yields, and errors that name the change that is wrong."""

from __future__ import annotations

import pytest

from taxonomy.evolution import (
    ChangeError,
    apply_changes,
    check_mapping,
    forward_codes,
    mapping_kinds,
    recheck_modes,
)
from taxonomy.schema import parse_taxonomy

SPEC = parse_taxonomy(
    {
        "slug": "tiny",
        "name": "Tiny",
        "labelling_mode": "multi_label",
        "categories": [
            {
                "code": "C1",
                "name": "Planning",
                "modes": [
                    {"code": "A", "name": "Alpha", "definition": "a"},
                    {"code": "B", "name": "Beta", "definition": "b", "guidance": "look at b"},
                ],
            },
            {"code": "C2", "name": "Acting", "modes": [{"code": "C", "name": "Gamma", "definition": "c"}]},
        ],
    }
)


def test_untouched_modes_map_to_themselves_and_an_added_mode_is_new():
    result = apply_changes(
        SPEC,
        [{"op": "add", "code": "D", "name": "Delta", "definition": "d", "category": "C2", "proposals": [4]}],
    )
    assert result.mapping == {"A": ("A",), "B": ("B",), "C": ("C",)}
    assert result.added == ("D",) and result.proposals == {"D": (4,)}
    assert result.spec.mode("D").category_code == "C2"


def test_a_rename_changes_code_and_name_and_carries_the_mapping():
    result = apply_changes(SPEC, [{"op": "rename", "code": "A", "new_code": "A2", "name": "Alpha prime"}])
    assert result.mapping["A"] == ("A2",) and result.spec.mode("A2").name == "Alpha prime"
    assert result.spec.mode("A") is None and result.spec.mode("A2").definition == "a"
    assert mapping_kinds(result.mapping, [m.code for m in result.spec.all_modes()])["A"] == "renamed"


def test_a_merge_sends_several_modes_to_one():
    result = apply_changes(
        SPEC, [{"op": "merge", "codes": ["A", "B"], "into": {"code": "AB", "name": "Alpha-beta"}}]
    )
    assert result.mapping == {"A": ("AB",), "B": ("AB",), "C": ("C",)}
    merged = result.spec.mode("AB")
    assert (merged.name, merged.definition, merged.category_code) == ("Alpha-beta", "a", "C1")
    kinds = mapping_kinds(result.mapping, ["AB", "C"])
    assert kinds["A"] == kinds["B"] == "merged"


def test_a_merge_may_keep_the_second_code():
    result = apply_changes(SPEC, [{"op": "merge", "codes": ["A", "B"], "into": {"code": "B"}}])
    assert result.mapping["A"] == ("B",) and [m.code for m in result.spec.all_modes()] == ["B", "C"]


def test_a_split_sends_one_mode_to_several_that_need_a_recheck():
    parts = [
        {"code": "C", "name": "Gamma narrow", "definition": "c1"},
        {"code": "C9", "name": "Gamma 9", "definition": "c9"},
    ]
    result = apply_changes(SPEC, [{"op": "split", "code": "C", "into": parts}])
    assert result.mapping["C"] == ("C", "C9")
    split, fresh = recheck_modes(result.mapping, [m.code for m in result.spec.all_modes()])
    assert split == {"C": ("C", "C9")} and fresh == ()


def test_retire_maps_to_nothing_and_edit_changes_only_the_words():
    result = apply_changes(
        SPEC,
        [
            {"op": "retire", "code": "C"},
            {"op": "edit", "code": "B", "definition": "b, sharper", "guidance": "g"},
        ],
    )
    assert result.mapping["C"] == () and result.retired == ("C",)
    assert [c.code for c in result.spec.categories] == ["C1"]  # the emptied category goes too
    assert (result.spec.mode("B").definition, result.spec.mode("B").guidance) == ("b, sharper", "g")
    assert result.mapping["B"] == ("B",)


def test_changes_compose_in_order():
    result = apply_changes(
        SPEC,
        [
            {"op": "rename", "code": "A", "new_code": "A2"},
            {"op": "merge", "codes": ["A2", "B"], "into": {"code": "M", "name": "Merged", "definition": "m"}},
            {"op": "rename", "code": "M", "new_code": "M2"},
        ],
    )
    assert result.mapping == {"A": ("M2",), "B": ("M2",), "C": ("C",)}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([], "changes: no changes"),
        ([{"op": "grow"}], "change 1: unknown op 'grow'"),
        ([{"op": "retire", "code": "Z"}], "change 1 (retire): 'Z' is not a mode"),
        ([{"op": "retire", "code": "A", "why": 1}], "change 1 (retire): unknown key 'why'"),
        (
            [{"op": "add", "code": "A", "name": "x", "definition": "y", "category": "C1"}],
            "A is already a mode",
        ),
        ([{"op": "add", "code": "D", "name": "x", "category": "C1"}], "'definition' is required"),
        ([{"op": "add", "code": "D", "name": "x", "definition": "y"}], "say which category"),
        ([{"op": "add", "code": "D", "name": "x", "definition": "y", "category": "C7"}], "no category 'C7'"),
        (
            [
                {"op": "retire", "code": "C"},
                {"op": "add", "code": "D", "name": "Alpha", "definition": "y", "category": "C1"},
            ],
            "change 2 (add): the result is not a valid taxonomy",
        ),
        ([{"op": "merge", "codes": ["A"]}], "at least two modes"),
        (
            [{"op": "split", "code": "A", "into": [{"code": "A1", "name": "x", "definition": "y"}]}],
            "at least two",
        ),
        ([{"op": "rename", "code": "A"}], "give a new_code, a name, or both"),
        ([{"op": "rename", "code": "A", "new_code": "B"}], "B is already a mode"),
        ([{"op": "rename", "code": "A", "new_code": "has space"}], "invalid code"),
        ([{"op": "edit", "code": "A"}], "nothing to edit"),
        ([{"op": "edit", "code": "A", "definition": ""}], "'definition' cannot be empty"),
    ],
)
def test_a_wrong_change_is_named(changes, message):
    with pytest.raises(ChangeError) as error:
        apply_changes(SPEC, changes)
    assert message in str(error.value)


def test_a_mode_with_subtypes_is_not_retired_silently():
    spec = apply_changes(
        SPEC, [{"op": "add", "code": "A1", "name": "Alpha one", "definition": "x", "parent": "A"}]
    ).spec
    with pytest.raises(ChangeError, match=r"change 1 \(retire\): A has subtypes \(A1\)"):
        apply_changes(spec, [{"op": "retire", "code": "A"}])


def test_a_confirmed_mapping_must_name_every_old_mode_and_say_retire_explicitly():
    assert check_mapping({"A": "A2", "B": ["A2"], "C": "retire"}, ["A", "B", "C"], ["A2"]) == {
        "A": ("A2",),
        "B": ("A2",),
        "C": (),
    }
    with pytest.raises(ValueError) as error:
        check_mapping({"A": "A2", "B": [], "X": "A2"}, ["A", "B", "C"], ["A2"])
    text = str(error.value)
    assert "X is not a mode of the current version" in text
    assert "B is not mapped: map it to a new mode or say 'retire'" in text and "C is not mapped" in text
    with pytest.raises(ValueError, match="A -> Q: not a mode of the new version"):
        check_mapping({"A": "Q"}, ["A"], ["A2"])


def test_a_mode_is_followed_across_versions_only_while_it_maps_one_to_one():
    v1_v2 = {"A": ("A2",), "B": ("M",), "C": ("M",)}
    v2_v3 = {"A2": ("A3",), "M": ("M",)}
    assert forward_codes([v1_v2, v2_v3], "A") == "A3"
    assert forward_codes([v1_v2, v2_v3], "B") is None
    assert forward_codes([v2_v3], "M") == "M"
    assert forward_codes([], "A") == "A"
