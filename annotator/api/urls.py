"""Every REST API route, one list per module of annotator/api/ (the list's name is the module's).

Mounted at /api/ by annotator/urls.py. Token auth (`POST /api/token/`) or the browser session; the same
checks as the pages. Paths and names are a promise to scripts: tests/api/test_url_map.py holds them.
"""

from django.contrib.auth.decorators import login_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from annotator.api import (
    adjudication,
    admin,
    agreement,
    annotations,
    calibration,
    discussions,
    evolution,
    exports,
    imports,
    label_imports,
    llm,
    projects,
    proposals,
    rounds,
    signatures,
    tokens,
    traces,
)
from annotator.discovery import api as discovery
from annotator.live import api as live
from annotator.live import settings_api as live_settings
from annotator.outcomes import api as outcomes
from annotator.search import api as saved_views
from annotator.similar import api as similar
from annotator.tokens import api as token_list
from annotator.triage import api as triage
from taxonomy.api import TaxonomyViewSet

# "api-" basenames: the pages own "project-detail" and "taxonomy-detail" (same names would shadow them).
router = DefaultRouter()
router.register("projects", projects.ProjectViewSet, basename="api-project")  # annotator/api/projects.py
router.register("taxonomies", TaxonomyViewSet, basename="api-taxonomy")  # taxonomy/api.py

schema_urls = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Signed-in users only: the schema answers 401 without a session or token, the docs page redirects to
    # the login page (SERVE_PERMISSIONS in settings).
    path("docs/", login_required(SpectacularSwaggerView.as_view(url_name="api-schema")), name="api-docs"),
]
token_urls = [
    path("token/", tokens.IssueToken.as_view(), name="api-token"),
    path("tokens/", token_list.tokens, name="api-tokens"),
    path("tokens/<int:token_id>/", token_list.token, name="api-token-revoke"),
]
admin_urls = [
    path("projects/<slug:slug>/settings/", admin.project_settings, name="api-project-settings"),
    path("projects/<slug:slug>/archive/", admin.archive_project, name="api-project-archive"),
    path("projects/<slug:slug>/members/", admin.members, name="api-members"),
    path("projects/<slug:slug>/members/<int:membership_id>/", admin.member, name="api-member"),
    path("projects/<slug:slug>/batches/", admin.batches, name="api-project-batches"),
]
label_imports_urls = [
    path("projects/<slug:slug>/label-imports/", label_imports.import_labels, name="api-label-import"),
]
imports_urls = [
    path("projects/<slug:slug>/imports/", imports.start_import, name="api-import-start"),
    path("projects/<slug:slug>/imports/<int:job_id>/", imports.import_status, name="api-import-status"),
]
outcomes_urls = [
    path("projects/<slug:slug>/outcomes/", outcomes.import_outcomes, name="api-outcomes-import"),
]
exports_urls = [
    path("projects/<slug:slug>/exports/", exports.start_export, name="api-export-start"),
    path("projects/<slug:slug>/exports/labels/", exports.export_labels, name="api-export-labels"),
    path("projects/<slug:slug>/exports/<int:export_id>/", exports.export_detail, name="api-export-status"),
]
traces_urls = [
    path("projects/<slug:slug>/traces/", traces.ProjectTraceList.as_view(), name="api-project-traces"),
    path(
        "projects/<slug:slug>/traces/<int:trace_id>/", traces.ProjectTraceDetail.as_view(), name="api-trace"
    ),
    path(
        "projects/<slug:slug>/traces/<int:trace_id>/steps/",
        traces.TraceStepList.as_view(),
        name="api-trace-steps",
    ),
    path(
        "projects/<slug:slug>/traces/<int:trace_id>/search/",
        traces.TraceSearch.as_view(),
        name="api-trace-search",
    ),
]
annotations_urls = [
    path(
        "projects/<slug:slug>/traces/<int:trace_id>/annotations/",
        annotations.TraceAnnotationList.as_view(),
        name="api-trace-annotations",
    ),
    path(
        "projects/<slug:slug>/assignments/", annotations.MyAssignmentList.as_view(), name="api-my-assignments"
    ),
    path("projects/<slug:slug>/assignments/next/", annotations.ClaimNext.as_view(), name="api-claim-next"),
    path(
        "projects/<slug:slug>/assignments/<int:assignment_id>/annotation/",
        annotations.MyAnnotation.as_view(),
        name="api-my-annotation",
    ),
    path(
        "projects/<slug:slug>/assignments/<int:assignment_id>/submit/",
        annotations.SubmitAnnotation.as_view(),
        name="api-submit",
    ),
    path(
        "projects/<slug:slug>/assignments/<int:assignment_id>/skip/",
        annotations.SkipAssignment.as_view(),
        name="api-skip",
    ),
]
llm_urls = [
    path("projects/<slug:slug>/llm-runs/", llm.LLMRunList.as_view(), name="api-llm-runs"),
    path("projects/<slug:slug>/llm-runs/<int:run_id>/", llm.LLMRunDetail.as_view(), name="api-llm-run"),
    path(
        "projects/<slug:slug>/llm-runs/<int:run_id>/resume/",
        llm.LLMRunResume.as_view(),
        name="api-llm-run-resume",
    ),
    path("projects/<slug:slug>/llm-agreement/", llm.LLMAgreement.as_view(), name="api-llm-agreement"),
    path("projects/<slug:slug>/llm-settings/", llm.LLMSettings.as_view(), name="api-llm-settings"),
    path("projects/<slug:slug>/llm-settings/key/", llm.LLMKey.as_view(), name="api-llm-key"),
    path("projects/<slug:slug>/llm-settings/prompt/", llm.LLMPrompt.as_view(), name="api-llm-prompt"),
    path("projects/<slug:slug>/llm-runs/preview/", llm.LLMRunPreview.as_view(), name="api-llm-run-preview"),
    path(
        "projects/<slug:slug>/llm-runs/<int:run_id>/stop/", llm.LLMRunStop.as_view(), name="api-llm-run-stop"
    ),
    path(
        "projects/<slug:slug>/assignments/<int:assignment_id>/llm-labels/",
        llm.LLMLabelsForMe.as_view(),
        name="api-llm-labels",
    ),
]
agreement_urls = [
    path("projects/<slug:slug>/agreement/", agreement.agreement, name="api-agreement"),
]
triage_urls = [
    path("projects/<slug:slug>/triage/", triage.triage, name="api-triage"),
    path("projects/<slug:slug>/triage/round/", triage.triage_round, name="api-triage-round"),
]
similar_urls = [
    path("projects/<slug:slug>/similar/", similar.similar, name="api-similar"),
    path("projects/<slug:slug>/similar/stop/", similar.similar_stop, name="api-similar-stop"),
]
discovery_urls = [
    path("projects/<slug:slug>/discovery/", discovery.runs, name="api-discovery"),
    path("projects/<slug:slug>/discovery/estimate/", discovery.estimate, name="api-discovery-estimate"),
    path("projects/<slug:slug>/discovery/gate/", discovery.gate, name="api-discovery-gate"),
    path("projects/<slug:slug>/discovery/<int:run_id>/", discovery.run_detail, name="api-discovery-run"),
    path("projects/<slug:slug>/discovery/<int:run_id>/stop/", discovery.stop, name="api-discovery-stop"),
    path(
        "projects/<slug:slug>/discovery/<int:run_id>/resume/", discovery.resume, name="api-discovery-resume"
    ),
    path("projects/<slug:slug>/discovery/<int:run_id>/send/", discovery.send, name="api-discovery-send"),
    path(
        "projects/<slug:slug>/discovery/<int:run_id>/round/",
        discovery.candidate_round,
        name="api-discovery-round",
    ),
]
rounds_urls = [
    path("projects/<slug:slug>/rounds/", rounds.rounds, name="api-rounds"),
    path("projects/<slug:slug>/rounds/<int:round_id>/close/", rounds.close, name="api-rounds-close"),
    path("projects/<slug:slug>/rounds/trend/", rounds.trend, name="api-rounds-trend"),
]
calibration_urls = [
    path("projects/<slug:slug>/calibration/", calibration.calibration, name="api-calibration"),
    path("projects/<slug:slug>/calibration/items/", calibration.items, name="api-calibration-items"),
    path(
        "projects/<slug:slug>/assignments/<int:assignment_id>/gold/",
        calibration.gold,
        name="api-calibration-gold",
    ),
]
discussions_urls = [
    path(
        "projects/<slug:slug>/rounds/<int:round_id>/threads/",
        discussions.round_threads,
        name="api-round-threads",
    ),
    path(
        "projects/<slug:slug>/threads/<int:thread_id>/decision/", discussions.decide, name="api-thread-decide"
    ),
]
evolution_urls = [
    path("projects/<slug:slug>/taxonomy-migrations/", evolution.migrations, name="api-taxonomy-migrations"),
    path(
        "projects/<slug:slug>/taxonomy-migrations/<int:migration_id>/",
        evolution.migration,
        name="api-taxonomy-migration",
    ),
    path(
        "projects/<slug:slug>/taxonomy-migrations/<int:migration_id>/apply/",
        evolution.apply,
        name="api-taxonomy-migration-apply",
    ),
]
proposals_urls = [
    path(
        "projects/<slug:slug>/traces/<int:trace_id>/proposals/",
        proposals.trace_proposals,
        name="api-trace-proposals",
    ),
    path("projects/<slug:slug>/proposals/", proposals.proposals, name="api-proposals"),
    path("projects/<slug:slug>/proposals/settle/", proposals.settle, name="api-proposals-settle"),
]
adjudication_urls = [
    path("projects/<slug:slug>/adjudication/", adjudication.queue, name="api-adjudication"),
    path("projects/<slug:slug>/adjudication/claim/", adjudication.claim_next, name="api-adjudication-claim"),
    path("projects/<slug:slug>/adjudication/<int:item_id>/", adjudication.item, name="api-adjudication-item"),
    path(
        "projects/<slug:slug>/adjudication/<int:item_id>/decide/",
        adjudication.decide,
        name="api-adjudication-decide",
    ),
    path(
        "projects/<slug:slug>/adjudication/<int:item_id>/reopen/",
        adjudication.reopen,
        name="api-adjudication-reopen",
    ),
]
saved_views_urls = [
    path("projects/<slug:slug>/views/", saved_views.views, name="api-views"),
    path("projects/<slug:slug>/views/<int:view_id>/", saved_views.view_detail, name="api-view"),
]
signatures_urls = [
    path("projects/<slug:slug>/signatures/", signatures.project_signatures, name="api-signatures"),
]
# OTLP/HTTP (annotator/live/api.py). Names fixed: annotator.models.tokens.INGEST_ROUTES lets a project's
# ingest token call exactly these two.
live_urls = [
    path("projects/<slug:slug>/otlp/v1/traces", live.otlp_traces, name="api-otlp-traces"),
    path("projects/<slug:slug>/otlp/v1/logs", live.otlp_logs, name="api-otlp-logs"),
    # Not an ingest route: an ingest token is refused here.
    path("projects/<slug:slug>/live/", live_settings.live_settings, name="api-live-settings"),
]

urlpatterns = [
    *schema_urls,
    *token_urls,
    *admin_urls,
    *label_imports_urls,
    *imports_urls,
    *outcomes_urls,
    *exports_urls,
    *traces_urls,
    *saved_views_urls,
    *annotations_urls,
    *llm_urls,
    *agreement_urls,
    *rounds_urls,
    *triage_urls,
    *similar_urls,
    *discovery_urls,
    *calibration_urls,
    *discussions_urls,
    *evolution_urls,
    *proposals_urls,
    *adjudication_urls,
    *signatures_urls,
    *live_urls,
    *router.urls,  # projects/ and taxonomies/, and the browsable API root
]
