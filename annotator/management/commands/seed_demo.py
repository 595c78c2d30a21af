import logging
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from annotator.services.demo import DEMO_USERS, do_seed_demo


class Command(BaseCommand):
    help = (
        "Create the demo: generated sample traces, a project on MAST, an owner, two annotators and an "
        "adjudicator (logins printed), with the first traces already labelled by both annotators and a few "
        "disputes decided. Idempotent: running it again creates nothing new. For local use only."
    )

    def add_arguments(self, parser):
        parser.add_argument("--traces", type=int, default=40, help="Number of generated traces (default 40)")

    def handle(self, *args, traces: int, **options):
        # Each of the demo's submits runs its follow-up tasks inline (Celery eager), and Celery logs every
        # task it ran: a hundred lines a newcomer's first command does not need above the logins.
        trace_log = logging.getLogger("celery.app.trace")
        level = trace_log.level
        trace_log.setLevel(max(level, logging.WARNING))
        try:
            summary = do_seed_demo(n_traces=traces, work_dir=Path(settings.VAR_DIR) / "demo")
        finally:
            trace_log.setLevel(level)
        self.stdout.write(self.style.SUCCESS(summary))
        self.stdout.write("")
        # `make run` passes its HOST and PORT, so the address printed is the one being served.
        host, port = os.environ.get("HOST") or "127.0.0.1", os.environ.get("PORT") or "8000"
        self.stdout.write(f"Demo logins (open http://{host}:{port}/):")
        for username, password, role in DEMO_USERS:
            self.stdout.write(f"  {role:<12} {username:<8} password: {password}")
        self.stdout.write("")
