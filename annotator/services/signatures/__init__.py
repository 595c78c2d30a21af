"""The failure signatures' ORM bridge: from a project's labels to the figures of annotator.signatures.

load (a label source and filters in, numpy arrays out; sql: evidence points with their agents, in one
query) -> report (the envelope the page, API and command share, stored under the data's version) ->
refresh (the stored figures kept current after a few annotations change). Import what you need from here.
"""

from annotator.services.signatures.load import (
    BASE_SOURCES,
    GOLD_STATUSES,
    SignatureQuery,
    SignatureQueryError,
    load_signature_input,
    load_trace_rows,
    parse_signature_query,
    project_signatures,
)
from annotator.services.signatures.report import (
    FilterOptions,
    SignatureReport,
    build_report,
    compute_report,
    data_version,
    do_refresh_signatures,
    empty_message,
    filter_options,
    open_signatures,
    source_choices,
    with_view,
)

__all__ = [
    "BASE_SOURCES",
    "GOLD_STATUSES",
    "FilterOptions",
    "SignatureQuery",
    "SignatureQueryError",
    "SignatureReport",
    "build_report",
    "compute_report",
    "data_version",
    "do_refresh_signatures",
    "empty_message",
    "filter_options",
    "load_signature_input",
    "load_trace_rows",
    "open_signatures",
    "parse_signature_query",
    "project_signatures",
    "source_choices",
    "with_view",
]
