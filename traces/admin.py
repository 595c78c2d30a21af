from django.contrib import admin

from traces.models import Batch, Step, Trace


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
