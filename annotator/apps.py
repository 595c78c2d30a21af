from django.apps import AppConfig


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
