from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from annotator.services.demo import DEMO_USERS, do_seed_demo


class Command(BaseCommand):
    help = (
        "Create the demo: generated sample traces, a project on MAST, an owner, two annotators and an "
        "adjudicator (logins printed). Idempotent: running it again creates nothing new. For local use only."
    )

    def add_arguments(self, parser):
        parser.add_argument("--traces", type=int, default=40, help="Number of generated traces (default 40)")

    def handle(self, *args, traces: int, **options):
        summary = do_seed_demo(n_traces=traces, work_dir=Path(settings.VAR_DIR) / "demo")
        self.stdout.write(self.style.SUCCESS(summary))
        self.stdout.write("")
        self.stdout.write("Demo logins (open http://127.0.0.1:8000/):")
        for username, password, role in DEMO_USERS:
            self.stdout.write(f"  {role:<12} {username:<8} password: {password}")
        self.stdout.write("")
