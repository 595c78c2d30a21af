"""python manage.py similar_traces SLUG [--build | --stop]: the state of a project's similar-traces
representation, (re)build it in this process, or stop the build in progress."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.similar.service import (
    active_build,
    current_representation,
    do_build,
    do_request_build,
    do_stop_build,
    latest_build,
)


class Command(BaseCommand):
    help = (
        "Show how a project's traces are represented for similar traces (the `like=` filter and the viewer's "
        "panel): method, version, traces done. --build starts a new build (embeddings when the project's LLM "
        "settings name an embeddings model, else TF-IDF + SVD fitted on the project's own text) and runs it "
        "here to its end, instead of waiting for a worker. --stop stops the build in progress (in a worker "
        "or another process): it stays stopped, and the current representation is kept."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--build", action="store_true", help="Build (or rebuild) the representation now")
        action.add_argument("--stop", action="store_true", help="Stop the build in progress")

    def handle(self, *args, slug: str, build: bool, stop: bool, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project with slug {slug!r}")
        if stop:
            stopped = do_stop_build(project)
            if stopped is None:
                raise CommandError("No similar-traces build is in progress: nothing to stop")
            self.stdout.write(f"Stopped build v{stopped.version}.")
        if build:
            started = do_request_build(project)
            done = do_build(started.pk)
            if done.status != done.Status.SUCCEEDED:
                raise CommandError(done.error or f"the build ended {done.status}")
        current = current_representation(project)
        running = active_build(project)
        if current is None:
            self.stdout.write("No representation yet (run with --build).")
        else:
            self.stdout.write(
                f"v{current.version}: {current.label}, {current.traces_done} traces, built {current.finished_at:%Y-%m-%d %H:%M}"
            )
        if running is not None:
            self.stdout.write(
                f"building v{running.version}: {running.traces_done} / {running.traces_total} traces"
            )
        newest = latest_build(project)
        if newest is not None and newest.status == newest.Status.STOPPED:
            self.stdout.write(
                f"v{newest.version} stopped ({newest.error or 'stopped'}) at "
                f"{newest.traces_done} / {newest.traces_total} traces"
            )
