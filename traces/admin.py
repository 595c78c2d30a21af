from django.contrib import admin

from traces.models import Batch, ImportJob, Step, Trace


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ["name", "format", "trace_count", "step_count", "imported_by", "created_at"]
    search_fields = ["name", "source"]


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["external_id", "batch", "system", "model", "benchmark", "outcome", "step_count"]
    list_filter = ["outcome", "batch"]
    search_fields = ["external_id", "task", "model"]
    readonly_fields = ["raw", "content_hash"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["trace", "index", "agent", "kind", "tool_name"]
    list_filter = ["kind"]
    raw_id_fields = ["trace"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "batch_name", "status", "records_done", "created_by", "created_at"]
    list_filter = ["status"]
