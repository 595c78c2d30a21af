from django.core.management.base import BaseCommand

from taxonomy.services import load_builtin_taxonomies


class Command(BaseCommand):
    help = (
        "Load the built-in taxonomies (MAST, the six-mode taxonomy, KAMI and decisive-error for Who&When attributions) from taxonomy/builtin/. "
        "Idempotent: unchanged files create nothing; a changed file becomes a new version when the old one "
        "is in use by a project."
    )

    def handle(self, *args, **options):
        for version, changed in load_builtin_taxonomies():
            state = "loaded" if changed else "unchanged"
            self.stdout.write(f"{version.taxonomy.slug}: version {version.number} {state}")
