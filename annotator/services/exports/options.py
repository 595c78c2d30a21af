"""What an export contains and where it goes, validated once for the page, the API and the CLI.

Why a frozen dataclass: the options are stored on the Export row (JSON) and read back by the Celery task,
so they must round-trip through JSON exactly; and the Hub token is deliberately *not* one of them (see
annotator.services.exports.jobs for where it lives).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from annotator.models import Project
from annotator.search.filters import FilterError
from annotator.search.scope import as_pairs, scope_trace_ids
from traces.models import Batch

# Licences the Hub knows by these ids (a subset of https://huggingface.co/docs/hub/repositories-licenses).
LICENSES = (
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0",
    "cc0-1.0",
    "odc-by",
    "mit",
    "apache-2.0",
    "other",
)
DEFAULT_LICENSE = "cc-by-4.0"
# The Hub's rule for repo ids: namespace/name, letters, digits, "-", "_", "."; at most 96 characters each.
REPO_ID = re.compile(r"^[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?$")


class ExportOptionsError(ValueError):
    """Every problem with the requested options, one message each."""

    def __init__(self, messages: list[str]):
        self.messages = messages
        super().__init__("; ".join(messages))


@dataclass(frozen=True)
class ExportOptions:
    batches: tuple[str, ...] = ()  # batch names; empty = every batch of the project
    gold_only: bool = False  # only traces with gold labels, and no per-annotator config
    include_text: bool = True  # False drops step content and tool arguments (the raw trace text)
    real_names: bool = False  # False: annotators become annotator-1, annotator-2, ... (by user id)
    license: str = DEFAULT_LICENSE
    repo_id: str = ""  # push to this Hub dataset repo; empty = build the zip only
    private: bool = True
    commit_message: str = ""
    pretty_name: str = ""
    # A saved view (annotator.search.saved) limiting the traces: its name, and its filters as they were when
    # the export was asked for (the job runs later; the view may change meanwhile).
    view: str = ""
    view_params: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["batches"] = list(self.batches)
        data["view_params"] = [list(pair) for pair in self.view_params]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportOptions:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["batches"] = tuple(values.get("batches") or ())
        values["view_params"] = tuple(tuple(pair) for pair in values.get("view_params") or ())
        return cls(**values)


def _flag(value: Any, default: bool) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"1", "true", "on", "yes"}


def _names(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    items: Iterable[Any] = value.split(",") if isinstance(value, str) else value
    return tuple(dict.fromkeys(str(v).strip() for v in items if str(v).strip()))


def clean_options(project: Project, data: Mapping[str, Any]) -> ExportOptions:
    """Options from form, API or CLI values; raises ExportOptionsError naming every problem."""
    errors: list[str] = []
    batches = _names(data.get("batches"))
    known = set(Batch.objects.in_project(project).filter(name__in=batches).values_list("name", flat=True))
    for name in batches:
        if name not in known:
            errors.append(f"batch {name!r} is not in this project")
    license_id = str(data.get("license") or DEFAULT_LICENSE).strip()
    if license_id not in LICENSES:
        errors.append(f"licence {license_id!r} is not one of {', '.join(LICENSES)}")
    repo_id = str(data.get("repo_id") or "").strip()
    if repo_id.startswith("hf://"):
        repo_id = repo_id[len("hf://") :]
    if repo_id and not REPO_ID.match(repo_id):
        errors.append(
            f"{repo_id!r} is not a Hub repo id: expected owner/name (letters, digits, '-', '_', '.')"
        )
    view_name, view_params = _view(project, data.get("view"), errors)
    if errors:
        raise ExportOptionsError(errors)
    return ExportOptions(
        view=view_name,
        view_params=view_params,
        batches=batches,
        gold_only=_flag(data.get("gold_only"), False),
        include_text=_flag(data.get("include_text"), True),
        real_names=_flag(data.get("real_names"), False),
        license=license_id,
        repo_id=repo_id,
        private=_flag(data.get("private"), True),
        commit_message=str(data.get("commit_message") or "").strip()[:200],
        pretty_name=str(data.get("pretty_name") or "").strip()[:120],
    )


def _view(project: Project, ref: Any, errors: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A saved view of the project by id or name, checked to read (a mode gone from the taxonomy names its
    parameter). The export is for owners not blind on any trace: its label filters are theirs to use."""
    text = str(ref or "").strip()
    if not text:
        return "", ()
    views = project.saved_views.all()
    view = views.filter(pk=int(text)).first() if text.isdigit() else views.filter(name=text).first()
    if view is None:
        errors.append(f"view {text!r} is not a saved view of this project")
        return "", ()
    pairs = as_pairs(view.params)
    try:
        scope_trace_ids(project, pairs)  # a mode code gone from the taxonomy is named here
    except FilterError as error:
        errors.append(f"view {view.name!r}: {error.param}: {error.message}")
        return "", ()
    return view.name, pairs
