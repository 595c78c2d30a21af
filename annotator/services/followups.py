"""What happens after a trace's annotations changed and committed: enqueue, never compute here.

Called from `annotator.services.annotations.on_trace_annotations_changed` (submit, re-submit, skip) and
after an annotation import. Both follow-ups are idempotent, so running them twice is harmless, and a
failure is logged rather than raised: the annotator's save has already committed, and the next change
(or `manage.py agreement`, or the report page) runs them again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)

_CHUNK = 500


def after_annotations_changed(project_id: int, trace_ids: Iterable[int]) -> None:
    """Check the traces for the adjudication queue (a Celery task per chunk; inline when eager) and
    schedule the debounced agreement report refresh."""
    from annotator.services.reports import schedule_report_refresh
    from annotator.tasks import check_traces_for_adjudication

    ids = sorted(set(trace_ids))
    try:
        for start in range(0, len(ids), _CHUNK):
            check_traces_for_adjudication.delay(project_id, ids[start : start + _CHUNK])
    except Exception:
        log.exception("adjudication check of %d traces in project %s failed", len(ids), project_id)
    try:
        schedule_report_refresh(project_id)
    except Exception:
        log.exception("agreement report refresh for project %s failed", project_id)
