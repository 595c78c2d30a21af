"""URL map: pages per app, the REST API under /api/, the OpenAPI schema at /api/schema/."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotator.views import home, imports, projects, system

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", system.healthz, name="healthz"),
    path("p/<slug:slug>/", projects.project_detail, name="project-detail"),
    path("p/<slug:slug>/import/", imports.import_page, name="project-import"),
    path("p/<slug:slug>/import/<int:job_id>/", imports.import_job, name="project-import-job"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("taxonomies/", include("taxonomy.urls")),
    path("traces/", include("traces.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("annotator.api.urls")),
    path("admin/", admin.site.urls),
]
