"""python manage.py traces SLUG [filters] [--json]: find traces in a project, as the trace list and the API do."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404, QueryDict
from django.urls import reverse
from rest_framework.exceptions import APIException, ValidationError

from annotator.access import ProjectAccess
from annotator.api.traces import applied_filter, trace_filter, trace_list_body
from annotator.models import Project, Role
from annotator.search.csv_export import trace_csv_lines
from annotator.search.filters import FilterError
from annotator.search.saved import ViewError, do_save_view
from annotator.search.service import filtered_traces

# (flag, parameter, help): the flags are the API's query parameters with dashes.
FILTER_FLAGS = (
    ("batch", "A batch's id or name"),
    ("benchmark", "Benchmark name"),
    ("model", "Model name"),
    ("system", "Agent system / framework"),
    ("outcome", "success, failure or unknown"),
    ("score_min", "Score at least"),
    ("score_max", "Score at most"),
    ("steps_min", "At least this many steps"),
    ("steps_max", "At most this many steps"),
    ("state", "unassigned, in_progress, complete, in_adjudication or gold"),
    ("gold_mode", "A failure mode code in the gold (e.g. FM-1.3)"),
    ("human_mode", "A mode code in any submitted human annotation"),
    ("llm_mode", "A mode code in an LLM rater's labels"),
    ("disputed_mode", "A mode code the annotators disagree on (with --pair / --raters: among those raters)"),
    ("pair", "Two raters' usernames a,b: the traces both submitted"),
    ("raters", "Two or more raters' usernames a,b,c: the traces at least two of them submitted"),
    ("sig_mode", "A mode the failure signatures count on the trace (under --sig-source)"),
    ("sig_source", "The label source of --sig-mode: gold (default), union, agreed, annotator:NAME, gold+..."),
    ("evidence_kind", "A label's evidence on a step of this kind (tool_call, error, ...)"),
    ("evidence_tool", "A label's evidence on a step calling this tool"),
    ("tool", "A step calls this tool (exact name)"),
    ("tool_args", "Text in a step's tool arguments"),
    ("q", "Full-text search of step content (ranked; words match whole on PostgreSQL)"),
    ("like", "A trace id: the traces most similar to it first (docs/search.md, similar traces)"),
    ("ordering", "external_id, model, outcome, score, steps, batch, created, rank (q); - for descending"),
    ("page", "Page number (from 1)"),
    ("page_size", "Traces per page (1 to 200, default 50)"),
)


class Command(BaseCommand):
    help = (
        "Find traces in a project with the trace list's filters (the same names as the query parameters of "
        "GET /api/projects/SLUG/traces/, with dashes: --gold-mode FM-1.3 --q 'kubectl delete'). Prints a table, "
        "or with --json exactly the API's body. Without --user it reads as the operator (every trace, every "
        "filter); with --user it answers as that member would be answered, blind holds included. --view NAME "
        "applies a saved view; --save-view NAME saves the filters given as one."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        for name, text in FILTER_FLAGS:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=None, help=text)
        parser.add_argument("--meta", action="append", default=[], help="Metadata key:value (repeatable)")
        parser.add_argument(
            "--view",
            help="Apply a saved view (its id or name) instead of filters; --ordering may still be given",
        )
        parser.add_argument(
            "--save-view",
            metavar="NAME",
            help="Save the given filters as a view of the project named NAME (shared with its members), "
            "then list its traces",
        )
        parser.add_argument("--user", help="Answer as this member of the project (blind holds apply)")
        parser.add_argument(
            "--base-url",
            default="",
            help="The server's address for the next/previous links, e.g. https://annotator.example.org",
        )
        output = parser.add_mutually_exclusive_group()
        output.add_argument("--json", dest="as_json", action="store_true", help="The API's JSON body")
        output.add_argument(
            "--csv",
            dest="as_csv",
            action="store_true",
            help="Every matching trace (no paging) as CSV, as the trace list's Download CSV",
        )

    def handle(self, *args, slug, meta, user, base_url, as_json, as_csv, view, save_view, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project with slug {slug!r}")
        access = self._access(project, user)
        params = QueryDict(mutable=True)
        for name, _ in FILTER_FLAGS:
            if options.get(name) not in (None, ""):
                params[name] = options[name]
        params.setlist("meta", meta)
        if view and save_view:
            raise CommandError("--view applies a saved view, --save-view saves the filters: give one")
        if view:
            params["view"] = view
        url = base_url.rstrip("/") + reverse("api-project-traces", args=[slug])
        try:
            if save_view:
                saved = do_save_view(access, save_view, trace_filter(params))
                self.stderr.write(f"Saved the view {saved.name!r} (id {saved.pk}).")
            if as_csv:
                for line in trace_csv_lines(filtered_traces(access, applied_filter(access, params))):
                    self.stdout.write(line, ending="")
                return
            body = trace_list_body(access, params, url)
        except ValidationError as error:
            problems = "; ".join(
                f"--{k.replace('_', '-')}: {' '.join(map(str, v))}" for k, v in error.detail.items()
            )
            raise CommandError(problems) from error
        except ViewError as error:
            flag = "--save-view" if error.field == "name" else f"--{error.field.replace('_', '-')}"
            raise CommandError(f"{flag}: {error.message}") from error
        except FilterError as error:  # an unknown mode code, read when the traces are
            raise CommandError(f"--{error.param.replace('_', '-')}: {error.message}") from error
        except Http404 as error:
            raise CommandError(f"--view: {error}") from error
        except (PermissionDenied, APIException) as error:
            raise CommandError(str(error)) from error
        if as_json:
            self.stdout.write(json.dumps(body, indent=2))
            return
        self.stdout.write(f"{body['count']} trace(s)")
        for row in body["results"]:
            self.stdout.write(
                f"{row['id']:>8}  {row['external_id'][:40]:<40}  {row['outcome']:<8}  {row['model'][:30]:<30}  "
                f"{row['step_count']:>5} steps  {row['batch']}"
            )
            for match in row["matches"]:
                self.stdout.write(f"{'':>10}step {match['index']}: {match['snippet']}")
        if body["next"]:
            self.stdout.write(f"more: --page {int(params.get('page') or 1) + 1}")

    def _access(self, project: Project, username: str | None) -> ProjectAccess:
        if not username:
            # The operator who runs manage.py already reads the whole database: an owner who labels nothing.
            return ProjectAccess(user=None, project=project, roles=frozenset({Role.OWNER}))
        user = get_user_model().objects.filter(username=username).first()
        access = ProjectAccess.of(user, project) if user else None
        if access is None or not access.roles:
            raise CommandError(f"{username!r} is not a member of project {project.slug!r}")
        return access
