"""Context for the labelling panel: the taxonomy as a tree, with what this annotator chose on each mode.

The panel renders either the stored annotation or, after a refused save (invalid or stale), the payload
the user just sent, so nothing they typed is lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from annotator.models import Annotation, Assignment
from annotator.services.payload import AnnotationPayload
from taxonomy.models import FailureMode, TaxonomyVersion


@dataclass
class Pin:
    step: int
    quote: str
    value: str  # the hidden input's JSON; autoescaped in the attribute like any other text


@dataclass
class ModeNode:
    mode: FailureMode
    checked: bool = False
    primary: bool = False
    pins: list[Pin] = field(default_factory=list)
    note: str = ""
    subtypes: list[ModeNode] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return any(sub.checked for sub in self.subtypes)


@dataclass
class CategoryNode:
    code: str
    name: str
    description: str
    modes: list[ModeNode]

    @property
    def chosen(self) -> int:
        return sum(node.checked + sum(sub.checked for sub in node.subtypes) for node in self.modes)


def _pins(evidence: list[dict[str, Any]]) -> list[Pin]:
    pins = []
    for item in evidence:
        if isinstance(item, dict) and isinstance(item.get("step"), int):
            quote = str(item.get("quote") or "")
            value = {"step": item["step"], "quote": quote} if quote else {"step": item["step"]}
            pins.append(Pin(step=item["step"], quote=quote, value=json.dumps(value, ensure_ascii=False)))
    return pins


def chosen_from_annotation(annotation: Annotation | None) -> dict[str, dict[str, Any]]:
    if annotation is None:
        return {}
    return {
        label.mode.code: {"primary": label.primary, "evidence": label.evidence, "note": label.note}
        for label in annotation.labels.select_related("mode")
    }


def chosen_from_payload(payload: AnnotationPayload) -> dict[str, dict[str, Any]]:
    return {
        label.mode: {
            "primary": label.primary,
            "evidence": [item.as_json() for item in label.evidence],
            "note": label.note,
        }
        for label in payload.labels
    }


def taxonomy_tree(version: TaxonomyVersion, chosen: dict[str, dict[str, Any]]) -> list[CategoryNode]:
    """Categories > modes > subtypes, in taxonomy order (two queries)."""
    categories = list(version.categories.order_by("order"))
    nodes: dict[int, ModeNode] = {}
    top: dict[int | None, list[ModeNode]] = {}
    for mode in version.modes.order_by("order"):
        state = chosen.get(mode.code)
        node = ModeNode(
            mode=mode,
            checked=state is not None,
            primary=bool(state and state["primary"]),
            pins=_pins(state["evidence"]) if state else [],
            note=state["note"] if state else "",
        )
        nodes[mode.pk] = node
        if mode.parent_id and mode.parent_id in nodes:
            nodes[mode.parent_id].subtypes.append(node)
        else:
            top.setdefault(mode.category_id, []).append(node)
    tree = [CategoryNode(c.code, c.name, c.description, top.get(c.pk, [])) for c in categories]
    if top.get(None):
        tree.append(CategoryNode("", "Other modes", "", top[None]))
    return [category for category in tree if category.modes]


def panel_context(
    assignment: Assignment,
    annotation: Annotation | None,
    *,
    payload: AnnotationPayload | None = None,
    locked: bool = False,
) -> dict[str, Any]:
    project = assignment.project
    version = project.taxonomy_version
    source: Any = payload if payload is not None else annotation
    chosen = chosen_from_payload(payload) if payload is not None else chosen_from_annotation(annotation)
    args = [project.slug, assignment.pk]
    return {
        "assignment": assignment,
        "annotation": annotation,
        "tree": taxonomy_tree(version, chosen),
        "multi": version.is_multi_label,
        "no_failure": bool(source and source.no_failure),
        "ambiguous": bool(source and source.ambiguous),
        "confidence": source.confidence if source else None,
        "note": source.note if source else "",
        "version": annotation.version if annotation else 0,
        "submitted": bool(annotation and annotation.status == Annotation.Status.SUBMITTED),
        "locked": locked,
        "save_url": reverse("annotate-save", args=args),
        "submit_url": reverse("annotate-submit", args=args),
        "skip_url": reverse("annotate-skip", args=args),
    }
