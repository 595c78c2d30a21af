"""Agreement reports: which annotations count, loading them as arrays, computing and refreshing the report.

filters (which submitted annotations count) -> data (database to the report's input arrays) -> state
(distinct rows, and the stored state) -> jobs (request, compute, open; fingerprint says whether a stored
report still describes the data) -> refresh (the unfiltered report brought up to date incrementally).
Import what you need from here.
"""

from annotator.services.reports.filters import ReportFilterError, clean_filters
from annotator.services.reports.fingerprint import filters_key, inputs_fingerprint, report_settings
from annotator.services.reports.jobs import (
    do_compute_report,
    do_open_report,
    do_request_report,
    latest_finished,
    latest_report,
    report_is_current,
)
from annotator.services.reports.refresh import do_refresh_reports

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
