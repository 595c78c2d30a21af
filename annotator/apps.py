from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Annotation workflow"

    # No ready(): the Celery app and its tasks load on the first enqueue (annotator.services.enqueue.
    # celery_app), so a management command that sends no task never imports Celery, kombu or redis.


class OperatorsAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with its site open to superusers only (annotator.admin_site says why)."""

    default = False  # named in INSTALLED_APPS; AnnotatorConfig stays this module's default

    default_site = "annotator.admin_site.OperatorsAdminSite"
