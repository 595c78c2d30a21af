"""Codebook evolution, pure: apply a list of changes to a taxonomy spec and say where every old mode went.

A revised codebook is derived from the current one by explicit changes (add, rename, merge, split, retire,
edit), never by re-importing a whole file, because the changes are what tell the labels where to go: a
renamed or merged mode carries its labels over, a split or a new mode asks annotators to look again, a
retired mode's labels leave the active annotation. `apply_changes` returns the new spec with the mapping
old code -> new codes (identity for untouched modes, an empty tuple for retired ones).

Changes travel as plain dicts (from YAML, JSON, a form or the API), each with an ``op``::

    {op: add, code: FM-4.1, name: ..., definition: ..., guidance: ..., category: FC1, parent: FM-1.1,
     fatal: false, proposals: [12, 14]}
    {op: rename, code: FM-1.1, new_code: FM-1.1a, name: "New name"}      # either or both
    {op: merge, codes: [FM-1.4, FM-1.5], into: {code: FM-1.4, name: ..., definition: ...}}
    {op: split, code: FM-2.3, into: [{code: FM-2.3a, name: ..., definition: ...}, {...}]}
    {op: retire, code: FM-3.2}
    {op: edit, code: FM-1.1, definition: ..., guidance: ..., name: ..., fatal: true}

Every error names the change (``change 3 (merge): ...``) so the person who wrote the list can fix it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taxonomy.schema import CODE_PATTERN, TaxonomyFileError, TaxonomySpec, dump_taxonomy, parse_taxonomy

OPS = ("add", "rename", "merge", "split", "retire", "edit")
MAX_CHANGES = 200
_MODE_FIELDS = ("code", "name", "definition", "guidance", "examples", "aliases", "fatal")
_KEYS = {
    "add": {"op", "code", "name", "definition", "guidance", "examples", "aliases", "fatal", "category"}
    | {"parent", "proposals"},
    "rename": {"op", "code", "new_code", "name"},
    "merge": {"op", "codes", "into"},
    "split": {"op", "code", "into"},
    "retire": {"op", "code"},
    "edit": {"op", "code", "name", "definition", "guidance", "examples", "aliases", "fatal"},
}
_PART_KEYS = {"code", "name", "definition", "guidance", "examples", "aliases", "fatal"}


class ChangeError(ValueError):
    """A change that cannot be applied; the message names it: ``change 2 (split): ...``."""

    def __init__(self, index: int | None, op: str, problem: str) -> None:
        self.index, self.op, self.problem = index, op, problem
        where = "changes" if index is None else f"change {index + 1}" + (f" ({op})" if op else "")
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Evolution:
    """The result: the new spec, where each old mode went, and which new modes need a fresh look."""

    spec: TaxonomySpec
    mapping: dict[str, tuple[str, ...]]  # old code -> new codes; () = retired
    added: tuple[str, ...]  # new modes no old mode maps to
    proposals: dict[str, tuple[int, ...]]  # new code -> the proposals it was made from

    @property
    def retired(self) -> tuple[str, ...]:
        return tuple(old for old, new in self.mapping.items() if not new)


def apply_changes(spec: TaxonomySpec, changes: Sequence[Mapping[str, Any]]) -> Evolution:
    """Apply `changes` in order to `spec`; raises ChangeError naming the first change that is wrong."""
    if not isinstance(changes, Sequence) or isinstance(changes, str | bytes):
        raise ChangeError(None, "", "expected a list of changes")
    if not changes:
        raise ChangeError(None, "", "no changes: a new version needs at least one")
    if len(changes) > MAX_CHANGES:
        raise ChangeError(None, "", f"at most {MAX_CHANGES} changes at once, got {len(changes)}")
    data = dump_taxonomy(spec)
    mapping: dict[str, list[str]] = {mode.code: [mode.code] for mode in spec.all_modes()}
    proposals: dict[str, list[int]] = {}
    for index, change in enumerate(changes):
        if not isinstance(change, Mapping):
            raise ChangeError(index, "", f"expected a mapping with an 'op', got {type(change).__name__}")
        op = change.get("op")
        if op not in OPS:
            raise ChangeError(index, "", f"unknown op {op!r} (one of: {', '.join(OPS)})")
        unknown = sorted(set(change) - _KEYS[op])
        if unknown:
            raise ChangeError(
                index, op, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_KEYS[op]))})"
            )
        try:
            _APPLY[op](data, change, mapping, proposals)
            parse_taxonomy(data)  # after each change, so a clash is blamed on the change that made it
        except TaxonomyFileError as error:
            raise ChangeError(index, op, f"the result is not a valid taxonomy: {error}") from None
        except _Problem as problem:
            raise ChangeError(index, op, str(problem)) from None
    new = parse_taxonomy(data)
    targets = {code for codes in mapping.values() for code in codes}
    added = tuple(mode.code for mode in new.all_modes() if mode.code not in targets)
    return Evolution(
        spec=new,
        mapping={old: tuple(codes) for old, codes in mapping.items()},
        added=added,
        proposals={code: tuple(ids) for code, ids in proposals.items() if new.mode(code)},
    )


class _Problem(ValueError):
    pass


# --------------------------------------------------------------------------- the tree as dicts


def _lists(data: dict) -> Iterator[list[dict]]:
    """Every list of modes in the dumped taxonomy (category modes, top modes, subtypes)."""
    stack = [c["modes"] for c in data.get("categories", [])] + ([data["modes"]] if "modes" in data else [])
    while stack:
        modes = stack.pop()
        yield modes
        stack.extend(m["subtypes"] for m in modes if m.get("subtypes"))


def _find(data: dict, code: Any) -> tuple[list[dict], int]:
    if not isinstance(code, str) or not code.strip():
        raise _Problem(f"'code' must name a mode, got {code!r}")
    for modes in _lists(data):
        for i, mode in enumerate(modes):
            if mode["code"] == code:
                return modes, i
    raise _Problem(f"{code!r} is not a mode of this taxonomy (at this point in the list)")


def _exists(data: dict, code: str) -> bool:
    return any(mode["code"] == code for modes in _lists(data) for mode in modes)


def _no_subtypes(mode: dict, what: str) -> None:
    if mode.get("subtypes"):
        children = ", ".join(m["code"] for m in mode["subtypes"])
        raise _Problem(f"{mode['code']} has subtypes ({children}): {what} them first")


def _new_code(data: dict, code: Any, *, reusable: Sequence[str] = ()) -> str:
    if not isinstance(code, str) or not CODE_PATTERN.fullmatch(code.strip()):
        raise _Problem(f"invalid code {code!r}: 1-40 letters, digits, '.', '_' or '-'")
    code = code.strip()
    if code not in reusable and _exists(data, code):
        raise _Problem(f"{code} is already a mode of this taxonomy")
    return code


def _mode_dict(raw: Any, what: str, *, base: dict | None = None) -> dict:
    """A new mode from a change: name and definition required unless taken from `base`."""
    if not isinstance(raw, Mapping):
        raise _Problem(f"{what}: expected a mapping with code, name and definition")
    unknown = sorted(set(raw) - _PART_KEYS)
    if unknown:
        raise _Problem(f"{what}: unknown key {unknown[0]!r}")
    out = {k: copy.deepcopy(base[k]) for k in _MODE_FIELDS if base and k in base and k != "aliases"}
    for key in _MODE_FIELDS:
        if key in raw and raw[key] is not None:
            out[key] = raw[key]
    for key in ("name", "definition"):
        if not isinstance(out.get(key), str) or not out[key].strip():
            raise _Problem(f"{what}: '{key}' is required")
    return out


def _retarget(mapping: dict[str, list[str]], old: str, new: Sequence[str]) -> None:
    """Every old mode that now lands on `old` lands on `new` instead."""
    for targets in mapping.values():
        if old in targets:
            at = targets.index(old)
            rest = targets[:at] + targets[at + 1 :]
            targets[at : at + 1] = [code for code in new if code not in rest]


# --------------------------------------------------------------------------- the six changes


def _add(data: dict, change: Mapping, mapping: dict, proposals: dict) -> None:
    code = _new_code(data, change.get("code"))
    mode = _mode_dict({k: v for k, v in change.items() if k in _PART_KEYS}, "the new mode")
    mode["code"] = code
    parent, category = change.get("parent"), change.get("category")
    if parent is not None and category is not None:
        raise _Problem("give a parent or a category, not both (a subtype takes its parent's category)")
    if parent is not None:
        modes, i = _find(data, parent)
        modes[i].setdefault("subtypes", []).append(mode)
    elif category is not None:
        found = [c for c in data.get("categories", []) if c["code"] == category]
        if not found:
            codes = ", ".join(c["code"] for c in data.get("categories", [])) or "none"
            raise _Problem(f"no category {category!r} (categories: {codes})")
        found[0]["modes"].append(mode)
    elif data.get("categories") and "modes" not in data:
        raise _Problem("say which category the new mode belongs to ('category: ...')")
    else:
        data.setdefault("modes", []).append(mode)
    ids = change.get("proposals") or []
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise _Problem("'proposals' must be a list of proposal ids")
    proposals[code] = list(ids)


def _rename(data: dict, change: Mapping, mapping: dict, proposals: dict) -> None:
    modes, i = _find(data, change.get("code"))
    mode = modes[i]
    new_code, name = change.get("new_code"), change.get("name")
    if new_code is None and name is None:
        raise _Problem("give a new_code, a name, or both")
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise _Problem("'name' must be a non-empty string")
        mode["name"] = name.strip()
    if new_code is not None:
        old = mode["code"]
        mode["code"] = _new_code(data, new_code, reusable=[old])
        _retarget(mapping, old, [mode["code"]])
        if old in proposals:
            proposals[mode["code"]] = proposals.pop(old)


def _merge(data: dict, change: Mapping, mapping: dict, proposals: dict) -> None:
    codes = change.get("codes")
    if not isinstance(codes, list) or len(codes) < 2:
        raise _Problem("'codes' must list at least two modes to merge")
    if len(set(codes)) != len(codes):
        raise _Problem("a mode is listed twice in 'codes'")
    places = [_find(data, code) for code in codes]
    for modes, i in places:
        _no_subtypes(modes[i], "move or retire")
    first_list, first_i = places[0]
    into = change.get("into") or {}
    if not isinstance(into, Mapping):
        raise _Problem("'into' must be a mapping (code, name, definition)")
    target = into.get("code", codes[0])
    merged = _mode_dict({**into, "code": target}, "into", base=first_list[first_i])
    merged["code"] = _new_code(data, target, reusable=codes)
    # The merged mode stands where the first one stood; the others leave their lists.
    for code in codes[1:]:
        modes, i = _find(data, code)
        del modes[i]
    modes, i = _find(data, codes[0])
    modes[i] = merged
    for code in codes:
        _retarget(mapping, code, [merged["code"]])
    joined = [pid for code in codes for pid in proposals.pop(code, [])]
    if joined:
        proposals[merged["code"]] = joined


def _split(data: dict, change: Mapping, mapping: dict, proposals: dict) -> None:
    modes, i = _find(data, change.get("code"))
    old = modes[i]
    _no_subtypes(old, "move or retire")
    parts = change.get("into")
    if not isinstance(parts, list) or len(parts) < 2:
        raise _Problem("'into' must list at least two modes (code, name, definition each)")
    new_modes, seen = [], set()
    for n, part in enumerate(parts):
        mode = _mode_dict(part, f"into[{n}]")
        mode["code"] = _new_code(data, mode.get("code"), reusable=[old["code"]])
        if mode["code"] in seen:
            raise _Problem(f"into[{n}]: {mode['code']} is listed twice")
        seen.add(mode["code"])
        new_modes.append(mode)
    modes[i : i + 1] = new_modes
    _retarget(mapping, old["code"], [m["code"] for m in new_modes])
    proposals.pop(old["code"], None)


def _retire(data: dict, change: Mapping, mapping: dict, proposals: dict) -> None:
    modes, i = _find(data, change.get("code"))
    _no_subtypes(modes[i], "retire")
    code = modes.pop(i)["code"]
    _retarget(mapping, code, [])
    proposals.pop(code, None)
    if not modes:
        # An empty category is not a valid taxonomy; drop it rather than make the owner retire it too.
        data["categories"] = [c for c in data.get("categories", []) if c["modes"]]
        if not data["categories"]:
            del data["categories"]
        if "modes" in data and not data["modes"]:
            del data["modes"]
        for lst in _lists(data):
            for mode in lst:
                if mode.get("subtypes") == []:
                    del mode["subtypes"]


def _edit(data: dict, change: Mapping, mapping: dict, proposals: dict) -> None:
    modes, i = _find(data, change.get("code"))
    fields = [k for k in ("name", "definition", "guidance", "examples", "aliases", "fatal") if k in change]
    if not fields:
        raise _Problem("nothing to edit: give name, definition, guidance, examples, aliases or fatal")
    for key in fields:
        modes[i][key] = change[key]
        if key in ("name", "definition") and (not isinstance(change[key], str) or not change[key].strip()):
            raise _Problem(f"'{key}' cannot be empty")


_APPLY = {
    "add": _add,
    "rename": _rename,
    "merge": _merge,
    "split": _split,
    "retire": _retire,
    "edit": _edit,
}


# --------------------------------------------------------------------------- explicit mappings


RETIRE = "retire"


def check_mapping(
    raw: Mapping[str, Any], old_codes: Sequence[str], new_codes: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Validate a mapping confirmed by a person: every old code present, mapped to new codes or to the
    word ``retire`` (an empty or missing entry is refused, so nothing is dropped by omission). Returns
    old -> new codes, () for retired. Raises ValueError listing every problem."""
    if not isinstance(raw, Mapping):
        raise ValueError("the mapping must be a mapping of old code -> new code(s) or 'retire'")
    errors: list[str] = []
    known = set(new_codes)
    out: dict[str, tuple[str, ...]] = {}
    for code in sorted(set(raw) - set(old_codes)):
        errors.append(f"{code} is not a mode of the current version")
    for old in old_codes:
        value = raw.get(old)
        if isinstance(value, str):
            value = [part.strip() for part in value.replace(",", " ").split() if part.strip()]
        if not value:
            errors.append(f"{old} is not mapped: map it to a new mode or say '{RETIRE}'")
            continue
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            errors.append(f"{old}: expected new code(s) or '{RETIRE}'")
            continue
        if [v.lower() for v in value] == [RETIRE]:
            out[old] = ()
            continue
        missing = [v for v in value if v not in known]
        if missing:
            errors.append(f"{old} -> {', '.join(missing)}: not a mode of the new version")
            continue
        out[old] = tuple(dict.fromkeys(value))
    if errors:
        raise ValueError("; ".join(errors))
    return out


def mapping_kinds(mapping: Mapping[str, Sequence[str]], new_codes: Sequence[str]) -> dict[str, str]:
    """What happens to each old mode under a mapping: kept, renamed, merged, split or retired; and each
    new mode no old mode maps to: new. Merges and renames carry labels; splits and new modes re-check."""
    sources: dict[str, list[str]] = {}
    for old, targets in mapping.items():
        for new in targets:
            sources.setdefault(new, []).append(old)
    kinds: dict[str, str] = {}
    for old, targets in mapping.items():
        if not targets:
            kinds[old] = "retired"
        elif len(targets) > 1:
            kinds[old] = "split"
        elif len(sources[targets[0]]) > 1:
            kinds[old] = "merged"
        else:
            kinds[old] = "kept" if targets[0] == old else "renamed"
    for new in new_codes:
        if new not in sources:
            kinds[new] = "new"
    return kinds


def recheck_modes(mapping: Mapping[str, Sequence[str]], new_codes: Sequence[str]) -> tuple[dict, tuple]:
    """(old code -> the new modes its labels must be re-checked against (splits), new modes without a
    source (to re-check on the traces they were proposed on))."""
    kinds = mapping_kinds(mapping, new_codes)
    split = {old: tuple(mapping[old]) for old, kind in kinds.items() if kind == "split"}
    fresh = tuple(code for code, kind in kinds.items() if kind == "new")
    return split, fresh


def forward_codes(mappings: Sequence[Mapping[str, Sequence[str]]], code: str) -> str | None:
    """Follow a mode through successive version mappings; its code in the last version if every step is
    one-to-one (a rename or a keep), else None (merged, split or retired: not comparable as one row)."""
    for mapping in mappings:
        targets = mapping.get(code)
        if targets is None or len(targets) != 1:
            return None
        if sum(1 for other in mapping.values() if targets[0] in other) != 1:
            return None
        code = targets[0]
    return code
