from django.contrib import admin

from annotator.models import (
    AdjudicationItem,
    AgreementReport,
    Annotation,
    ApiToken,
    Assignment,
    Export,
    GoldLabel,
    ImportJob,
    LabelApplication,
    LabelHistory,
    Membership,
    Project,
    Rater,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "taxonomy_version", "overlap", "blind", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["project", "trace", "annotator", "status", "reserved_until"]
    list_filter = ["status", "project"]
    raw_id_fields = ["trace", "annotator"]


class LabelInline(admin.TabularInline):
    model = LabelApplication
    extra = 0


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["assignment", "status", "no_failure", "ambiguous", "confidence", "version", "updated_at"]
    list_filter = ["status"]
    inlines = [LabelInline]
    raw_id_fields = ["assignment"]


@admin.register(LabelHistory)
class LabelHistoryAdmin(admin.ModelAdmin):
    list_display = ["annotation", "action", "actor", "at"]
    readonly_fields = ["annotation", "actor", "action", "before", "after", "at"]


class GoldInline(admin.TabularInline):
    model = GoldLabel
    extra = 0


@admin.register(AdjudicationItem)
class AdjudicationItemAdmin(admin.ModelAdmin):
    list_display = ["project", "trace", "status", "severity", "claimed_by", "resolved_by"]
    list_filter = ["status", "project"]
    inlines = [GoldInline]
    raw_id_fields = ["trace"]


@admin.register(AgreementReport)
class AgreementReportAdmin(admin.ModelAdmin):
    list_display = ["project", "status", "fingerprint", "requested_at", "computed_at"]


@admin.register(Export)
class ExportAdmin(admin.ModelAdmin):
    list_display = ["project", "status", "target_repo", "created_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens can be listed and revoked (deleted) here; created with `manage.py create_api_token` or
    POST /api/token/, since only the digest is stored."""

    list_display = ["user", "prefix", "name", "created_at", "expires_at", "last_used_at"]
    search_fields = ["user__username", "prefix", "name"]
    readonly_fields = ["user", "digest", "prefix", "name", "created_at", "expires_at", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ["user", "kind", "source", "name", "created_at"]
    list_filter = ["kind"]
    search_fields = ["user__username", "source", "name"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "project", "batch_name", "status", "records_done", "created_by", "created_at"]
    list_filter = ["status"]
