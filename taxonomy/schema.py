"""The taxonomy file format: parse, validate, dump and look up failure modes.

A taxonomy travels as a YAML or JSON file (the built-ins live in ``taxonomy/builtin/``) and
becomes database rows only later, in the models layer. Keeping the format pure (no Django)
lets importers, management commands and tests validate a file before anything touches the
database, and makes every error name the exact field that is wrong, because the people who
write these files are researchers editing YAML by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

LABELLING_MODES = ("multi_label", "single_primary")
SLUG_PATTERN = re.compile(r"[a-z0-9-]+")
# Codes end up in URLs, CSV headers and exported datasets, so no spaces and a bounded length.
CODE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
DEFAULT_VERSION = "1.0"
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"

_TOP_KEYS = (
    "slug",
    "name",
    "version",
    "labelling_mode",
    "description",
    "citation",
    "source_url",
    "categories",
    "modes",
)
_CATEGORY_KEYS = ("code", "name", "description", "modes")
_MODE_KEYS = ("code", "name", "definition", "guidance", "examples", "aliases", "fatal", "subtypes")
# A leading enumerator such as "1.1", "FM-1.1:" or "AF-1a)" in an imported label. Old label
# sets renumber modes between versions, so the number is dropped and the name decides.
_ENUMERATOR = re.compile(r"^\s*(?:[A-Za-z]+-?)?\d+(?:\.\d+)*[a-z]?\s*[:.)\]-]?\s+(?=\S)")


class TaxonomyFileError(ValueError):
    """A taxonomy file is malformed; ``field`` is the path to the offending value.

    The message always reads ``<field>: <problem>`` (prefixed by the file name when loading
    from disk) so a user can jump straight to the line they must fix.
    """

    def __init__(self, field: str, problem: str, *, source: str | None = None) -> None:
        self.field = field
        self.problem = problem
        self.source = source
        message = f"{field}: {problem}" if field else problem
        super().__init__(f"{source}: {message}" if source else message)


@dataclass(frozen=True)
class ModeSpec:
    """One failure mode (or subtype). ``order`` is its position in ``TaxonomySpec.all_modes()``."""

    code: str
    name: str
    definition: str
    guidance: str = ""
    examples: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    fatal: bool = False
    subtypes: tuple[ModeSpec, ...] = ()
    parent_code: str | None = None
    category_code: str | None = None
    order: int = 0


@dataclass(frozen=True)
class CategorySpec:
    """A group of modes (MAST's FC1..FC3); subtypes inherit their parent's category."""

    code: str
    name: str
    description: str = ""
    modes: tuple[ModeSpec, ...] = ()
    order: int = 0


@dataclass(frozen=True)
class TaxonomySpec:
    """A whole taxonomy version as read from a file, before it becomes database rows."""

    slug: str
    name: str
    labelling_mode: str
    version: str = DEFAULT_VERSION
    description: str = ""
    citation: str = ""
    source_url: str = ""
    categories: tuple[CategorySpec, ...] = ()
    modes: tuple[ModeSpec, ...] = ()

    def all_modes(self) -> list[ModeSpec]:
        """Every mode flattened: categories in file order, then uncategorised modes; each
        parent comes before its subtypes, so creating rows in this order satisfies FKs."""
        return list(_walk([m for c in self.categories for m in c.modes] + list(self.modes)))

    def mode(self, code: str) -> ModeSpec | None:
        """The mode with exactly this code, or None."""
        return self._by_code.get(code)

    @cached_property
    def _by_code(self) -> dict[str, ModeSpec]:
        return {m.code: m for m in self.all_modes()}

    @cached_property
    def _lookup(self) -> dict[str, ModeSpec]:
        # cached_property writes to __dict__ directly, which a frozen dataclass allows; the
        # cache is not a field, so equality and hashing ignore it.
        index: dict[str, ModeSpec] = {}
        for mode in self.all_modes():
            for key in (mode.code, mode.name, *mode.aliases):
                index.setdefault(normalize_label(key), mode)
        return index


def _walk(modes: list[ModeSpec] | tuple[ModeSpec, ...]) -> Iterator[ModeSpec]:
    for mode in modes:
        yield mode
        yield from _walk(mode.subtypes)


def normalize_label(text: str) -> str:
    """Casefold and drop everything but letters and digits, so "Ignored Other Agents' Input"
    and "ignored other agent's input" compare equal. Validation rejects taxonomies whose
    codes, names or aliases collide under this key, so a lookup is never ambiguous."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def resolve_mode(spec: TaxonomySpec, name_or_code: str) -> ModeSpec | None:
    """Map an imported label (a code, a name, or an alias from an older paper version) to a mode.

    Only the first non-blank line counts: released MAST data writes the definition under
    the heading. If the whole heading does not match, a leading enumerator ("1.4 Fail to
    elicit clarification") is dropped and the rest must match a name or alias, because
    older label sets numbered the same mode differently.
    """
    line = next((ln for ln in str(name_or_code).splitlines() if ln.strip()), "")
    found = spec._lookup.get(normalize_label(line))
    if found is not None or not _ENUMERATOR.match(line):
        return found
    rest = normalize_label(_ENUMERATOR.sub("", line, count=1))
    found = spec._lookup.get(rest)
    if found is not None and normalize_label(found.code) == rest:
        return None  # "1.1 FM-1.3" is not a name; refuse rather than guess
    return found


# --------------------------------------------------------------------------- parsing


def _type_name(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _check_keys(data: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    for key in data:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise TaxonomyFileError(where, f"unknown key (allowed: {', '.join(allowed)})")


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TaxonomyFileError(path or "<root>", f"expected a mapping, got {_type_name(value)}")
    return value


def _string(
    data: Mapping[str, Any], key: str, path: str, *, required: bool = False, limit: int | None = None
) -> str:
    """A stripped string; ``limit`` mirrors the database column so a file that parses also saves."""
    where = f"{path}.{key}" if path else key
    value = data.get(key)
    if value is None:
        if required:
            raise TaxonomyFileError(where, "required")
        return ""
    if not isinstance(value, str):
        hint = " (quote it in YAML)" if isinstance(value, int | float | bool) else ""
        raise TaxonomyFileError(where, f"expected a string, got {_type_name(value)}{hint}")
    if required and not value.strip():
        raise TaxonomyFileError(where, "required (empty)")
    if limit is not None and len(value.strip()) > limit:
        raise TaxonomyFileError(where, f"too long ({len(value.strip())} characters, at most {limit})")
    return value.strip()


def _list(data: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise TaxonomyFileError(f"{path}.{key}" if path else key, f"expected a list, got {_type_name(value)}")
    return list(value)


def _strings(data: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    out = []
    for i, item in enumerate(_list(data, key, path)):
        if not isinstance(item, str) or not item.strip():
            raise TaxonomyFileError(f"{path}.{key}[{i}]", f"expected a non-empty string, got {item!r}")
        out.append(item.strip())
    return tuple(out)


class _Parser:
    """Builds the spec in one pass while remembering where every code/name/alias was seen,
    so a clash can name both the offending field and the first use."""

    def __init__(self) -> None:
        self.order = 0
        self.keys: dict[str, tuple[str, str]] = {}  # normalised key -> (field path, mode code)

    def claim(self, key: str, where: str, what: str, code: str) -> None:
        norm = normalize_label(key)
        if not norm:
            raise TaxonomyFileError(where, f"{what} {key!r} has no letters or digits")
        seen = self.keys.get(norm)
        if seen is None:
            self.keys[norm] = (where, code)
            return
        first, owner = seen
        if owner != code:
            raise TaxonomyFileError(where, f"duplicate {what} {key!r} (clashes with {first})")
        if what == "alias":
            raise TaxonomyFileError(where, f"redundant alias {key!r}: matches this mode's code or name")
        # a mode whose name equals its own code ("other" / "Other") is harmless

    def mode(self, raw: Any, path: str, parent: str | None, category: str | None) -> ModeSpec:
        data = _mapping(raw, path)
        _check_keys(data, _MODE_KEYS, path)
        code = _string(data, "code", path, required=True)
        if not CODE_PATTERN.fullmatch(code):
            raise TaxonomyFileError(
                f"{path}.code", f"invalid code {code!r}: 1-40 letters, digits, '.', '_' or '-'"
            )
        self.claim(code, f"{path}.code", "code", code)
        name = _string(data, "name", path, required=True, limit=200)
        self.claim(name, f"{path}.name", "name", code)
        definition = _string(data, "definition", path, required=True)
        aliases = _strings(data, "aliases", path)
        for i, alias in enumerate(aliases):
            self.claim(alias, f"{path}.aliases[{i}]", "alias", code)
        fatal = data.get("fatal", False)
        if not isinstance(fatal, bool):
            raise TaxonomyFileError(f"{path}.fatal", f"expected true or false, got {_type_name(fatal)}")
        order = self.order
        self.order += 1
        subtypes = tuple(
            self.mode(item, f"{path}.subtypes[{i}]", code, category)
            for i, item in enumerate(_list(data, "subtypes", path))
        )
        return ModeSpec(
            code=code,
            name=name,
            definition=definition,
            guidance=_string(data, "guidance", path),
            examples=_strings(data, "examples", path),
            aliases=aliases,
            fatal=fatal,
            subtypes=subtypes,
            parent_code=parent,
            category_code=category,
            order=order,
        )

    def category(self, raw: Any, path: str, index: int, seen: dict[str, str]) -> CategorySpec:
        data = _mapping(raw, path)
        _check_keys(data, _CATEGORY_KEYS, path)
        code = _string(data, "code", path, required=True)
        if not CODE_PATTERN.fullmatch(code):
            raise TaxonomyFileError(f"{path}.code", f"invalid code {code!r}")
        if code.casefold() in seen:
            first = seen[code.casefold()]
            raise TaxonomyFileError(
                f"{path}.code", f"duplicate category code {code!r} (clashes with {first})"
            )
        seen[code.casefold()] = f"{path}.code"
        name = _string(data, "name", path, required=True, limit=200)
        items = _list(data, "modes", path)
        if not items:
            raise TaxonomyFileError(f"{path}.modes", "a category needs at least one mode")
        modes = tuple(self.mode(item, f"{path}.modes[{i}]", None, code) for i, item in enumerate(items))
        return CategorySpec(code, name, _string(data, "description", path), modes, index)


def parse_taxonomy(data: Mapping[str, Any]) -> TaxonomySpec:
    """Validate a decoded taxonomy file strictly and build the spec.

    Strict because a silently ignored typo ("defintion:") would ship a mode without its
    definition to every annotator; errors name the field path, e.g.
    ``categories[1].modes[0].definition: required``.
    """
    data = _mapping(data, "")
    _check_keys(data, _TOP_KEYS, "")
    slug = _string(data, "slug", "", required=True, limit=80)
    if not SLUG_PATTERN.fullmatch(slug):
        raise TaxonomyFileError("slug", f"invalid slug {slug!r}: use lowercase letters, digits and '-'")
    name = _string(data, "name", "", required=True, limit=200)
    mode = _string(data, "labelling_mode", "", required=True)
    if mode not in LABELLING_MODES:
        raise TaxonomyFileError(
            "labelling_mode", f"must be one of {', '.join(LABELLING_MODES)}; got {mode!r}"
        )
    version = _string(data, "version", "", limit=40) or DEFAULT_VERSION
    source_url = _string(data, "source_url", "", limit=200)
    if source_url and not re.match(r"https?://\S+$", source_url):
        raise TaxonomyFileError("source_url", f"expected an http(s) URL, got {source_url!r}")
    parser = _Parser()
    seen_categories: dict[str, str] = {}
    categories = tuple(
        parser.category(item, f"categories[{i}]", i, seen_categories)
        for i, item in enumerate(_list(data, "categories", ""))
    )
    modes = tuple(
        parser.mode(item, f"modes[{i}]", None, None) for i, item in enumerate(_list(data, "modes", ""))
    )
    if parser.order == 0:
        raise TaxonomyFileError("modes", "a taxonomy needs at least one mode (under categories or modes)")
    return TaxonomySpec(
        slug=slug,
        name=name,
        labelling_mode=mode,
        version=version,
        description=_string(data, "description", ""),
        citation=_string(data, "citation", ""),
        source_url=source_url,
        categories=categories,
        modes=modes,
    )


# --------------------------------------------------------------------------- files


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys: PyYAML would keep the last one silently."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:  # before merging "<<:" keys, which may legitimately override
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str | int | float | bool | None):
            continue  # let SafeLoader report unhashable keys in its own words
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _decode(text: str, *, as_json: bool, source: str) -> Any:
    if as_json:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno}, column {exc.colno}"
            raise TaxonomyFileError(where, f"invalid JSON: {exc.msg}", source=source) from exc
        except RecursionError:
            raise TaxonomyFileError("", "nested too deeply to be a taxonomy", source=source) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except RecursionError:
        raise TaxonomyFileError("", "nested too deeply to be a taxonomy", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaxonomyFileError(where, f"invalid YAML: {problem}", source=source) from exc


def load_taxonomy_file(path: str | Path) -> TaxonomySpec:
    """Read a ``.yaml``/``.yml``/``.json`` taxonomy file (other suffixes: JSON if it starts
    with ``{``, else YAML). Every error is a TaxonomyFileError prefixed with the file name."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaxonomyFileError("", f"cannot read file: {exc}", source=path.name) from exc
    suffix = path.suffix.lower()
    as_json = suffix == ".json" or (suffix not in (".yaml", ".yml") and text.lstrip().startswith("{"))
    data = _decode(text, as_json=as_json, source=path.name)
    try:
        return parse_taxonomy(data)
    except TaxonomyFileError as exc:
        raise TaxonomyFileError(exc.field, exc.problem, source=path.name) from exc


def _dump_mode(mode: ModeSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"code": mode.code, "name": mode.name, "definition": mode.definition}
    if mode.guidance:
        out["guidance"] = mode.guidance
    if mode.examples:
        out["examples"] = list(mode.examples)
    if mode.aliases:
        out["aliases"] = list(mode.aliases)
    if mode.fatal:
        out["fatal"] = True
    if mode.subtypes:
        out["subtypes"] = [_dump_mode(m) for m in mode.subtypes]
    return out


def dump_taxonomy(spec: TaxonomySpec) -> dict[str, Any]:
    """The canonical plain dict for a spec (fixed key order, empty optional fields omitted),
    ready for ``yaml.safe_dump(..., sort_keys=False)`` or ``json.dumps``; parsing it back
    gives an equal spec, which is what export/re-import relies on."""
    out: dict[str, Any] = {
        "slug": spec.slug,
        "name": spec.name,
        "version": spec.version,
        "labelling_mode": spec.labelling_mode,
    }
    for key in ("description", "citation", "source_url"):
        if getattr(spec, key):
            out[key] = getattr(spec, key)
    if spec.categories:
        out["categories"] = []
        for category in spec.categories:
            item: dict[str, Any] = {"code": category.code, "name": category.name}
            if category.description:
                item["description"] = category.description
            item["modes"] = [_dump_mode(m) for m in category.modes]
            out["categories"].append(item)
    if spec.modes:
        out["modes"] = [_dump_mode(m) for m in spec.modes]
    return out


def builtin_paths() -> list[Path]:
    """The shipped taxonomy files (``taxonomy/builtin/*.yaml``), sorted for stable seeding."""
    return sorted(BUILTIN_DIR.glob("*.yaml"))
