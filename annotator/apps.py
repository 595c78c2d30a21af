from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Annotation workflow"

    def ready(self) -> None:
        # The Celery app and its tasks are registered once Django is ready (the package itself stays
        # empty so the pure modules import without Django): services enqueue by task name through
        # annotator.services.enqueue, which looks the name up in this registry.
        from annotator import (
            celery,  # noqa: F401
            tasks,  # noqa: F401
        )


class OperatorsAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with its site open to superusers only (annotator.admin_site says why)."""

    default = False  # named in INSTALLED_APPS; AnnotatorConfig stays this module's default

    default_site = "annotator.admin_site.OperatorsAdminSite"
