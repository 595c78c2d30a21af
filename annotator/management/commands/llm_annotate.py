"""python manage.py llm_annotate SLUG (--batch NAME | --view NAME) [--limit N] [--model M] [--concurrency N]
[--dry-run] [--resume ID]

--dry-run prints the run's estimate (annotator.services.llm.estimate), then the first trace's prompt (of its
first window when it is judged in windows), and calls nothing."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from annotator.models import LLMRun, Project, SavedView
from annotator.search.scope import find_view, operator_access
from annotator.services.llm.config import current_prompt
from annotator.services.llm.estimate import RunEstimate, estimate_run
from annotator.services.llm.labeller import windows_for
from annotator.services.llm.process import do_process_run
from annotator.services.llm.runs import (
    LLMRunError,
    check_concurrency,
    check_run_request,
    do_resume_run,
    do_start_run,
    run_progress,
)
from traces.models import Trace


class Command(BaseCommand):
    help = (
        "Label a batch with the project's LLM rater (settings on the project's LLM page), in this process, "
        "printing progress and a summary. Labels become submitted annotations by the rater user llm:<model>. "
        "Interrupted? Run it again with --resume RUN_ID: finished traces are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument("--batch", help="A batch of the project (required unless --resume)")
        parser.add_argument(
            "--view", help="A saved view of the project: label its traces instead of a batch's (name or id)"
        )
        parser.add_argument("--limit", type=int, help="Only the first N traces of the batch (or view)")
        parser.add_argument("--model", help="Model name (default: the project's LLM settings)")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print the run's estimate (requests, prompt tokens, cost) and the first trace's prompt; call nothing",
        )
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="Continue a stopped or failed run")
        parser.add_argument(
            "--concurrency",
            type=int,
            metavar="N",
            help="Requests in flight at once for this run (1 to 64; default: the project's LLM settings)",
        )

    def handle(
        self, *args, slug: str, batch, limit, model, dry_run: bool, resume, concurrency, view, **options
    ):
        try:
            check_concurrency(concurrency)
        except LLMRunError as error:
            raise CommandError(str(error), returncode=2) from None
        project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}", returncode=2)
        if resume:
            run = self._resumed(project, resume)
        else:
            if not batch and not view:
                raise CommandError("--batch is required (or --view NAME, or --resume RUN_ID)", returncode=2)
            if batch and view:
                raise CommandError("Give --batch or --view, not both", returncode=2)
            try:
                if view:
                    if dry_run:
                        raise CommandError("--dry-run estimates a batch: give --batch", returncode=2)
                    saved = self._view(project, view)
                    run = do_start_run(project, view=saved, limit=limit, model=model, enqueue=False)
                elif dry_run:
                    return self._dry_run(project, batch, limit, model)
                else:
                    run = do_start_run(project, batch_name=batch, limit=limit, model=model, enqueue=False)
            except LLMRunError as error:
                raise CommandError(str(error), returncode=2) from None
        in_flight = concurrency or run.endpoint.get("concurrency", 1)
        self.stdout.write(
            f"LLM run {run.pk}: {run.model} on {run.covers}, {run.total} traces, "
            f"up to {in_flight} requests at once"
        )
        result = do_process_run(run.pk, on_progress=self._progress, concurrency=concurrency)
        if result.busy:
            raise CommandError(f"Run {run.pk} is being processed by another worker", returncode=1)
        self._summary(result.run)

    def _view(self, project: Project, ref: str) -> SavedView:
        try:
            # The operator who runs manage.py reads the whole database: an owner who labels nothing.
            return find_view(operator_access(project), ref)
        except Http404:
            raise CommandError(f"--view: no saved view {ref!r} in {project.slug}", returncode=2) from None

    def _resumed(self, project: Project, run_id: int) -> LLMRun:
        run = LLMRun.objects.filter(project=project, pk=run_id).select_related("batch").first()
        if run is None:
            raise CommandError(f"No LLM run {run_id} in {project.slug}", returncode=2)
        if run.status not in LLMRun.ACTIVE_STATUSES and not do_resume_run(run, enqueue=False):
            raise CommandError(f"Run {run_id} is {run.status_label}: nothing to resume", returncode=2)
        return run

    def _dry_run(self, project: Project, batch: str, limit, model) -> None:
        batch_row, config, model = check_run_request(
            project, batch_name=batch, limit=limit, model=model, check_url=False
        )
        trace = Trace.objects.in_project(project).filter(batch=batch_row).order_by("id").first()
        if trace is None:
            raise CommandError(f"Batch {batch!r} has no traces", returncode=2)
        template = current_prompt(project)
        self._estimate(estimate_run(project, batch, limit, model))
        windows = windows_for(project, trace, template=template, config=config)
        shown = f", its {windows[0].label} (windowed)" if windows[0].windowed else ""
        self.stdout.write(
            f"\n# Dry run: model {model} at {config.base_url}, prompt v{template.number}, "
            f"trace {trace.external_id}{shown}"
        )
        for message in windows[0].messages:
            self.stdout.write(f"\n===== {message['role']} =====\n{message['content']}")

    def _estimate(self, estimate: RunEstimate) -> None:
        windowed = f", {estimate.windowed_traces:,} judged in windows" if estimate.windowed_traces else ""
        skipped = (
            f"; {estimate.skipped:,} already labelled by this model, skipped" if estimate.skipped else ""
        )
        lines = [
            f"# Estimate: {estimate.requests:,} requests for {estimate.asked:,} traces{windowed}{skipped}",
            f"#   prompt tokens: about {estimate.prompt_tokens:,} (4 characters a token)",
            f"#   completion tokens: at most {estimate.max_completion_tokens:,} "
            f"({estimate.max_tokens:,} per request)",
        ]
        if estimate.priced:
            lines.append(
                f"#   cost: about {estimate.prompt_cost} for the prompts + at most {estimate.max_completion_cost} "
                f"for the answers = at most {estimate.max_cost}"
            )
        else:
            lines.append("#   cost: set both prices per million tokens in the LLM settings to see it")
        lines.append("#   not included: a second request after a malformed answer")
        self.stdout.write("\n".join(lines))

    def _progress(self, run: LLMRun) -> None:
        left = f", time left: {run.time_left}" if run.time_left else ""
        self.stdout.write(
            f"  {run.processed}/{run.total} traces: {run.done} labelled, {run.in_flight} in flight, "
            f"{run.failed} failed, {run.skipped} skipped, {run.tokens_used:,} tokens{left}"
        )

    def _summary(self, run: LLMRun) -> None:
        style = self.style.SUCCESS if run.status == LLMRun.Status.SUCCEEDED else self.style.WARNING
        self.stdout.write(
            style(
                f"Run {run.pk} {run.status_label}: {run.done} labelled, {run.failed} failed, {run.skipped} skipped "
                f"of {run.total}; {run.tokens_used:,} tokens; labels by {run.rater.username}"
            )
        )
        if run.error:
            self.stdout.write(self.style.ERROR(run.error))
        for failure in run_progress(run, failures=5)["failures"]:
            self.stdout.write(f"  failed {failure['trace']}: {failure['error']}")
        if run.status == LLMRun.Status.STOPPED or run.status == LLMRun.Status.FAILED:
            self.stdout.write(
                f"Continue with: python manage.py llm_annotate {run.project.slug} --resume {run.pk}"
            )
