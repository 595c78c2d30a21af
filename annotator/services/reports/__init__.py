"""Agreement reports (issue 4): which annotations count, loading them as arrays, and the report's job.

filters (which submitted annotations count) -> data (database to the report's input arrays) -> jobs
(request, fingerprint, compute, refresh). Import what you need from here.
"""

from annotator.services.reports.filters import ReportFilterError, clean_filters
from annotator.services.reports.jobs import (
    do_compute_report,
    do_open_report,
    do_refresh_reports,
    do_request_report,
    filters_key,
    inputs_fingerprint,
    latest_finished,
    latest_report,
    report_is_current,
    report_settings,
)

__all__ = [
    "ReportFilterError",
    "clean_filters",
    "do_compute_report",
    "do_open_report",
    "do_refresh_reports",
    "do_request_report",
    "filters_key",
    "inputs_fingerprint",
    "latest_finished",
    "latest_report",
    "report_is_current",
    "report_settings",
]
