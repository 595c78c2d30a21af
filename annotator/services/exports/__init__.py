"""Publishing a project's labelled traces as a Hugging Face dataset (issue 6).

options (what to export) -> rows (database to row dicts) -> dataset (parquet configs) + facts/card
(README.md) -> jobs (the Celery job: zip, push with hub). Import what you need from here. Beside the
dataset, tables writes the same rows as CSV or JSON Lines label tables (streamed, no job).
"""

from annotator.services.exports.hub import HubError, PushResult, push_folder
from annotator.services.exports.jobs import (
    ExportSummary,
    build_export,
    do_queue_export,
    do_run_export,
    export_status,
    exports_for,
    token_key,
)
from annotator.services.exports.options import LICENSES, ExportOptions, ExportOptionsError, clean_options

__all__ = [
    "LICENSES",
    "ExportOptions",
    "ExportOptionsError",
    "ExportSummary",
    "HubError",
    "PushResult",
    "build_export",
    "clean_options",
    "do_queue_export",
    "do_run_export",
    "export_status",
    "exports_for",
    "push_folder",
    "token_key",
]
