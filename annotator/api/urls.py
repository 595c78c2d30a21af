"""REST API routes. Token auth (`POST /api/token/`) or the browser session; same checks as the pages."""

from django.urls import include, path
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from annotator.api import imports, projects
from taxonomy.api import TaxonomyViewSet

router = DefaultRouter()
router.register("projects", projects.ProjectViewSet, basename="project")
router.register("taxonomies", TaxonomyViewSet, basename="taxonomy")

urlpatterns = [
    path("token/", obtain_auth_token, name="api-token"),
    path("projects/<slug:slug>/imports/", imports.start_import, name="api-import-start"),
    path("projects/<slug:slug>/imports/<int:job_id>/", imports.import_status, name="api-import-status"),
    path("", include(router.urls)),
]
