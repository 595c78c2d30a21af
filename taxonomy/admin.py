from django.contrib import admin

from taxonomy.models import Category, FailureMode, Taxonomy, TaxonomyVersion


class CategoryInline(admin.TabularInline):
    model = Category
    extra = 0


@admin.register(Taxonomy)
class TaxonomyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(TaxonomyVersion)
class TaxonomyVersionAdmin(admin.ModelAdmin):
    list_display = ["taxonomy", "number", "label", "labelling_mode", "created_at"]
    list_filter = ["labelling_mode"]
    inlines = [CategoryInline]


@admin.register(FailureMode)
class FailureModeAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "version", "category", "parent", "fatal"]
    list_filter = ["version", "fatal"]
    search_fields = ["code", "name", "definition"]
