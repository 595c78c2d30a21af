"""REST API routes. Token auth (`POST /api/token/`) or the browser session; same checks as the pages."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from annotator.api import admin, exports, imports, label_imports, projects, tokens
from taxonomy.api import TaxonomyViewSet

router = DefaultRouter()
# "api-" basenames: the pages own "project-detail" and "taxonomy-detail" (same names would shadow them).
router.register("projects", projects.ProjectViewSet, basename="api-project")
router.register("taxonomies", TaxonomyViewSet, basename="api-taxonomy")

urlpatterns = [
    path("token/", tokens.IssueToken.as_view(), name="api-token"),
    # Project administration: settings, archive, members, batches (annotator/api/admin.py).
    path("projects/<slug:slug>/settings/", admin.project_settings, name="api-project-settings"),
    path("projects/<slug:slug>/archive/", admin.archive_project, name="api-project-archive"),
    path("projects/<slug:slug>/members/", admin.members, name="api-members"),
    path("projects/<slug:slug>/members/<int:membership_id>/", admin.member, name="api-member"),
    path("projects/<slug:slug>/batches/", admin.batches, name="api-project-batches"),
    path("projects/<slug:slug>/label-imports/", label_imports.import_labels, name="api-label-import"),
    path("projects/<slug:slug>/imports/", imports.start_import, name="api-import-start"),
    path("projects/<slug:slug>/imports/<int:job_id>/", imports.import_status, name="api-import-status"),
    path("projects/<slug:slug>/exports/", exports.start_export, name="api-export-start"),
    path("projects/<slug:slug>/exports/<int:export_id>/", exports.export_detail, name="api-export-status"),
    # Failure signatures as JSON (annotator/api/signatures_urls.py).
    path("projects/<slug:slug>/", include("annotator.api.signatures_urls")),
    # Traces, steps, assignments and annotations of a project (annotator/api/annotate_urls.py).
    path("projects/<slug:slug>/", include("annotator.api.annotate_urls")),
    # LLM runs, LLM agreement, and the LLM's labels for an annotator who submitted (annotator/api/llm_urls.py).
    path("projects/<slug:slug>/", include("annotator.api.llm_urls")),
    # The agreement report and the adjudication queue (annotator/api/review_urls.py).
    path("projects/<slug:slug>/", include("annotator.api.review_urls")),
    path("", include(router.urls)),
]
