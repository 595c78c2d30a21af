"""What a stored agreement report is valid for: the settings it is computed with, the key of its filters, and
the fingerprint of its inputs (the filters, the taxonomy version, the report settings and an aggregate of
the matching submitted annotations: count, highest id, sum of versions, latest update). Every change to an
annotation bumps its version and `updated_at`, and a new one raises the count, so one aggregate query tells
whether a stored report still describes the data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Sum

from annotator.agreement.report import SCHEMA, ReportSettings
from annotator.models import Annotation, Assignment, Project
from annotator.services.reports.data import summary_aggregate
from annotator.services.reports.filters import report_annotations

__all__ = [
    "canonical",
    "filters_key",
    "fingerprint_of",
    "inputs_fingerprint",
    "newest_change",
    "report_settings",
]


def report_settings() -> ReportSettings:
    return ReportSettings(
        n_boot=settings.AGREEMENT_BOOTSTRAP,
        pair_n_boot=settings.AGREEMENT_PAIR_BOOTSTRAP,
        ci=0.95,
        seed=0,
        windows=(1, 3),
    )


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def filters_key(filters: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(dict(filters)).encode()).hexdigest()


def inputs_fingerprint(project: Project, filters: Mapping[str, Any]) -> str:
    """One aggregate query over the matching submitted annotations, hashed with everything else the
    report depends on."""
    return _fingerprint(project, filters)[0]


def _fingerprint(project: Project, filters: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    if connection.vendor == "postgresql":
        stats = summary_aggregate(project, filters)  # the same numbers from one narrow table, no join
    else:
        stats = report_annotations(project, filters).aggregate(
            n=Count("id"), last_id=Max("id"), versions=Sum("version"), changed=Max("updated_at")
        )
    return fingerprint_of(project, filters, stats), stats


def fingerprint_of(project: Project, filters: Mapping[str, Any], stats: Mapping[str, Any]) -> str:
    cfg = report_settings()
    payload = {
        "schema": SCHEMA,
        "taxonomy_version": project.taxonomy_version_id,
        "filters": dict(filters),
        "settings": [cfg.n_boot, cfg.pair_n_boot, cfg.ci, cfg.seed, list(cfg.windows)],
        "annotations": dict(stats),
    }
    return hashlib.sha256(canonical(payload).encode()).hexdigest()


def newest_change(project: Project) -> datetime | None:
    """When any of the project's annotations last changed (any status, any filter): one short range of
    the updated_at index, whatever the project's size."""
    return (
        Annotation.objects.filter(assignment__project=project, assignment__purpose=Assignment.Purpose.WORK)
        .order_by("-updated_at")
        .values_list("updated_at", flat=True)
        .first()
    )
