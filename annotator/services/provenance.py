"""Where a project's labels came from: made here, imported, or by a language model. The one place that
decides it, so the dataset card (and anything else that must not claim what it cannot know) asks here.

- imported: the annotation's history starts with an ``imported`` entry (``label_import``: files, the
  upload page, a published dataset re-imported; also labels a staff member attributed to a real account);
- language model: the rater's kind is ``llm`` (annotator.raters, the rater-kind column);
- made here: everything else (labelled in the annotation page or its API).

Labels an import left out because the taxonomy lacks their mode are recorded on that ``imported`` entry
(``ignored_labels``, written by ``label_import``); votes the source left empty (MAST's ``NaN``) are recorded by the parser in the
annotation's note (``no value in the source for: A; B``). An import older than these records gives "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, QuerySet

from annotator.models import Annotation, LabelHistory
from annotator.raters import llm_q

IMPORTED = "imported"
MISSING_PREFIX = "no value in the source for: "  # how traces.importers.mast_labelled notes missing votes


@dataclass
class LabelProvenance:
    made_here: int = 0  # human annotations made in this application
    imported: int = 0  # annotations brought in by an import (how they were made is not recorded)
    llm: int = 0
    raters_here: set[str] = field(default_factory=set)
    raters_imported: set[str] = field(default_factory=set)
    # None: unknown (some imported annotation predates the record); 0 when nothing was imported.
    ignored_labels: int | None = 0
    missing_votes: int | None = 0


def label_provenance(annotations: QuerySet[Annotation]) -> LabelProvenance:
    """Counts over ``annotations`` (submitted ones, normally): two queries whatever their number."""
    imported_entry = LabelHistory.objects.filter(annotation=OuterRef("pk"), action=IMPORTED)
    rows = (
        annotations.annotate(
            imported=Exists(imported_entry),
            is_llm=ExpressionWrapper(llm_q("assignment__annotator"), output_field=BooleanField()),
        )
        .order_by()
        .values_list("assignment__annotator__username", "imported", "note", "is_llm")
    )
    result = LabelProvenance()
    for username, imported, note, is_llm in rows:
        if is_llm:
            result.llm += 1
        elif imported:
            result.imported += 1
            result.raters_imported.add(username)
            if note.startswith(MISSING_PREFIX):
                result.missing_votes += len(note[len(MISSING_PREFIX) :].split("; "))
        else:
            result.made_here += 1
            result.raters_here.add(username)
    if result.imported:
        recorded = LabelHistory.objects.filter(
            action=IMPORTED, annotation__in=annotations.order_by().values("pk")
        ).values_list("after", flat=True)
        counts = [
            len(after["ignored_labels"]) if "ignored_labels" in (after or {}) else None for after in recorded
        ]
        result.ignored_labels = None if None in counts else sum(counts)
    return result
