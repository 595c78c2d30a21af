"""Answer keys that come with imported data, kept apart from a trace's metadata.

Some datasets ship someone's verdict on the run next to the run itself: Who&When's attribution
(`mistake_agent`, `mistake_step`, `mistake_reason`), MAST's human `failure_modes` and judge votes. Shown to
an annotator before they label, it is the answer; so importers' metadata is split here, once, into what
anyone who may open the trace sees (`Trace.metadata`) and what only people who may see the trace's labels
see (`Trace.answer_key`; the rule lives in annotator.access). Pure: no Django.
"""

from __future__ import annotations

from typing import Any

# Per source format, the metadata keys that carry a verdict. Every import applies the union (ANSWER_KEY
# FIELDS), because the same columns reach us through generic formats too (a Hugging Face copy of Who&When
# keeps `mistake_agent` as an extra column; a native export round-trips whatever the metadata held).
ANSWER_KEYS_BY_FORMAT: dict[str, tuple[str, ...]] = {
    "who_and_when": ("mistake_agent", "mistake_step", "mistake_reason", "mistake_type", "labels"),
    "mast_labelled": ("failure_modes",),
    "mast_full": ("mast_annotation", "failure_modes"),
    "hf_dataset": ("mistake_agent", "mistake_step", "mistake_reason", "mistake_type", "failure_modes"),
}
ANSWER_KEY_FIELDS: frozenset[str] = frozenset(key for keys in ANSWER_KEYS_BY_FORMAT.values() for key in keys)


def split_answer_key(metadata: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata without answer keys, the answer keys), each a new dict; key order kept."""
    public: dict[str, Any] = {}
    key: dict[str, Any] = {}
    for name, value in (metadata or {}).items():
        (key if name in ANSWER_KEY_FIELDS else public)[name] = value
    return public, key


def public_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    return split_answer_key(metadata)[0]


def answer_key_of(metadata: dict[str, Any] | None) -> dict[str, Any]:
    return split_answer_key(metadata)[1]


def merged(metadata: dict[str, Any] | None, answer_key: dict[str, Any] | None) -> dict[str, Any]:
    """Metadata with its answer keys put back: what an export writes, so a re-import splits it again."""
    return {**(metadata or {}), **(answer_key or {})}
