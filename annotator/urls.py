"""URL map: pages per app, the REST API under /api/, the OpenAPI schema at /api/schema/."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotator.views import discussions, exports, home, imports, new_project, projects, system

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", system.healthz, name="healthz"),
    path("mentions/", discussions.mentions, name="mentions"),
    path("projects/new/", new_project.new_project, name="project-new"),
    path("p/<slug:slug>/", projects.project_detail, name="project-detail"),
    path("p/<slug:slug>/import/", imports.import_page, name="project-import"),
    path("p/<slug:slug>/import/<int:job_id>/", imports.import_job, name="project-import-job"),
    path("p/<slug:slug>/export/", exports.export_page, name="project-export"),
    path("p/<slug:slug>/export/<int:export_id>/", exports.export_job, name="project-export-job"),
    path(
        "p/<slug:slug>/export/<int:export_id>/download/",
        exports.export_download,
        name="project-export-download",
    ),
    # Failure signatures: analytics page and CSV downloads (annotator/signatures_urls.py).
    path("p/<slug:slug>/signatures/", include("annotator.signatures_urls")),
    # Annotation, the step viewer, review and members (annotator/annotate_urls.py).
    path("p/<slug:slug>/", include("annotator.annotate_urls")),
    # The LLM rater's settings, prompt and runs (annotator/llm_urls.py).
    path("p/<slug:slug>/llm/", include("annotator.llm_urls")),
    # The agreement report and the adjudication queue (annotator/review_urls.py).
    path("p/<slug:slug>/", include("annotator.review_urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The one-time set-password link of an invitation (annotator/services/members.py): Django's reset view.
    path(
        "accounts/set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="registration/set_password.html", success_url="/accounts/set-password/done/"
        ),
        name="password-set",
    ),
    path(
        "accounts/set-password/done/",
        auth_views.PasswordResetCompleteView.as_view(template_name="registration/set_password_done.html"),
        name="password-set-done",
    ),
    path("taxonomies/", include("taxonomy.urls")),
    path("traces/", include("traces.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Signed-in users only: the schema answers 401 without a session or token, the docs page redirects to
    # the login page (SERVE_PERMISSIONS in settings).
    path("api/docs/", login_required(SpectacularSwaggerView.as_view(url_name="api-schema")), name="api-docs"),
    path("api/", include("annotator.api.urls")),
    path("admin/", admin.site.urls),
]

# Our own error pages (annotator/views/errors.py): the reason in plain words, navigation, no server paths.
handler403 = "annotator.views.errors.forbidden"
handler404 = "annotator.views.errors.not_found"
handler500 = "annotator.views.errors.server_error"
