"""python manage.py similar_traces SLUG [--build]: the state of a project's similar-traces representation, or
(re)build it in this process."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.similar.service import active_build, current_representation, do_build, do_request_build


class Command(BaseCommand):
    help = (
        "Show how a project's traces are represented for similar traces (the `like=` filter and the viewer's "
        "panel): method, version, traces done. --build starts a new build (embeddings when the project's LLM "
        "settings name an embeddings model, else TF-IDF + SVD fitted on the project's own text) and runs it "
        "here to its end, instead of waiting for a worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Project slug")
        parser.add_argument("--build", action="store_true", help="Build (or rebuild) the representation now")

    def handle(self, *args, slug: str, build: bool, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project with slug {slug!r}")
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
