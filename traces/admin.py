from django.contrib import admin

from traces.models import Batch, Trace


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ["name", "format", "trace_count", "step_count", "imported_by", "created_at"]
    search_fields = ["name", "source"]


# Steps have no admin page: their key is (trace, index), which Django's admin cannot address; a trace's
# steps are read in the trace viewer.
@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["external_id", "batch", "system", "model", "benchmark", "outcome", "step_count"]
    list_filter = ["outcome", "batch"]
    search_fields = ["external_id", "task", "model"]
    readonly_fields = ["raw", "content_hash"]
