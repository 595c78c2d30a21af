from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "traces"
    verbose_name = "Agent traces"

    def ready(self) -> None:
        # The parsers know no Django: hand them the limits from settings once, at start-up.
        from django.conf import settings

        from traces.importers import limits

        mb = limits.MB
        limits.configure(
            max_depth=settings.IMPORT_MAX_DEPTH,
            max_value_bytes=settings.IMPORT_MAX_VALUE_MB * mb,
            max_record_bytes=settings.IMPORT_MAX_RECORD_MB * mb,
            max_archive_bytes=settings.IMPORT_MAX_ARCHIVE_MB * mb,
            max_zip_ratio=settings.IMPORT_MAX_ZIP_RATIO,
            max_memory_bytes=settings.IMPORT_MAX_MEMORY_MB * mb,
        )
