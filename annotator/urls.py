"""Every page of the app, one list per views module (the list's name is the module's); the API, with its
schema and docs, is one include of annotator/api/urls.py. Paths and names are a promise to bookmarks,
scripts and `reverse()`: tests/api/test_url_map.py holds them."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotator.discovery import views as discovery
from annotator.live import views as live
from annotator.outcomes import views as outcomes
from annotator.search import views as saved_views
from annotator.similar import views as similar
from annotator.tokens import views as tokens
from annotator.triage import views as triage
from annotator.views import (
    adjudication,
    agreement,
    annotate,
    calibration,
    discussions,
    evolution,
    exports,
    home,
    imports,
    llm,
    members,
    new_project,
    projects,
    proposals,
    queue,
    review,
    rounds,
    signatures,
    system,
    trace,
)
from taxonomy import views as taxonomy_views
from traces import views as traces_views

home_urls = [
    path("", home.home, name="home"),
]
system_urls = [
    path("healthz", system.healthz, name="healthz"),
]
auth_urls = [
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
]
tokens_urls = [
    path("account/tokens/", tokens.tokens_page, name="account-tokens"),
    path("account/tokens/new/", tokens.create_token, name="account-token-create"),
    path("account/tokens/revoke-all/", tokens.revoke_all_tokens, name="account-tokens-revoke-all"),
    path("account/tokens/<int:token_id>/revoke/", tokens.revoke_token, name="account-token-revoke"),
    path("account/tokens/p/<slug:slug>/new/", tokens.create_project_token, name="project-token-create"),
]
projects_urls = [
    path("p/<slug:slug>/", projects.project_detail, name="project-detail"),
]
new_project_urls = [
    path("projects/new/", new_project.new_project, name="project-new"),
]
members_urls = [
    path("p/<slug:slug>/members/", members.members, name="project-members"),
    path("p/<slug:slug>/members/add/", members.add_member, name="project-member-add"),
    path(
        "p/<slug:slug>/members/<int:membership_id>/remove/",
        members.remove_member,
        name="project-member-remove",
    ),
    path("p/<slug:slug>/batches/attach/", members.attach_batch, name="project-batch-attach"),
    path("p/<slug:slug>/settings/", members.update_settings, name="project-settings"),
    path("p/<slug:slug>/members/<int:membership_id>/role/", members.change_role, name="project-member-role"),
    path("p/<slug:slug>/archive/", members.archive, name="project-archive"),
]
imports_urls = [
    path("p/<slug:slug>/import/", imports.import_page, name="project-import"),
    path("p/<slug:slug>/import/<int:job_id>/", imports.import_job, name="project-import-job"),
]
outcomes_urls = [
    path("p/<slug:slug>/outcomes/", outcomes.outcomes_page, name="project-outcomes"),
    path("p/<slug:slug>/outcomes/import/", outcomes.import_outcomes, name="project-outcomes-import"),
]
exports_urls = [
    path("p/<slug:slug>/export/", exports.export_page, name="project-export"),
    path("p/<slug:slug>/export/<int:export_id>/", exports.export_job, name="project-export-job"),
    path("p/<slug:slug>/export/labels/", exports.export_labels, name="project-export-labels"),
    path(
        "p/<slug:slug>/export/<int:export_id>/download/",
        exports.export_download,
        name="project-export-download",
    ),
]
queue_urls = [
    path("p/<slug:slug>/next/", queue.start_next, name="start-next"),
    path("p/<slug:slug>/mine/", queue.my_assignments, name="my-assignments"),
]
annotate_urls = [
    path("p/<slug:slug>/a/<int:assignment_id>/", annotate.annotate, name="annotate"),
    path("p/<slug:slug>/a/<int:assignment_id>/save/", annotate.save_draft, name="annotate-save"),
    path("p/<slug:slug>/a/<int:assignment_id>/submit/", annotate.submit, name="annotate-submit"),
    path("p/<slug:slug>/a/<int:assignment_id>/skip/", annotate.skip, name="annotate-skip"),
]
trace_urls = [
    path("p/<slug:slug>/t/<int:trace_id>/steps/", trace.trace_steps, name="trace-steps"),
    path("p/<slug:slug>/t/<int:trace_id>/steps/<int:index>/", trace.trace_step, name="trace-step"),
]
review_urls = [
    path("p/<slug:slug>/traces/", review.trace_list, name="project-traces"),
    path("p/<slug:slug>/t/<int:trace_id>/review/", review.trace_review, name="trace-review"),
    path("p/<slug:slug>/t/<int:trace_id>/review/steps/", review.review_steps, name="trace-review-steps"),
]
saved_views_urls = [
    path("p/<slug:slug>/traces/csv/", saved_views.traces_csv, name="project-traces-csv"),
    path("p/<slug:slug>/views/", saved_views.save_view, name="project-view-save"),
    path("p/<slug:slug>/views/<int:view_id>/", saved_views.open_saved_view, name="project-view"),
    path("p/<slug:slug>/views/<int:view_id>/rename/", saved_views.rename_view, name="project-view-rename"),
    path("p/<slug:slug>/views/<int:view_id>/delete/", saved_views.delete_view, name="project-view-delete"),
    path("p/<slug:slug>/views/<int:view_id>/round/", saved_views.view_round, name="project-view-round"),
]
agreement_urls = [
    path("p/<slug:slug>/agreement/", agreement.agreement, name="agreement"),
    path("p/<slug:slug>/agreement/refresh/", agreement.refresh, name="agreement-refresh"),
    path("p/<slug:slug>/agreement/<int:report_id>/", agreement.report_status, name="agreement-report"),
    path("p/<slug:slug>/agreement/<int:report_id>/report.json", agreement.report_json, name="agreement-json"),
    path("p/<slug:slug>/agreement/<int:report_id>/report.csv", agreement.report_csv, name="agreement-csv"),
]
rounds_urls = [
    path("p/<slug:slug>/rounds/", rounds.rounds_page, name="rounds"),
    path("p/<slug:slug>/rounds/open/", rounds.open_round, name="rounds-open"),
    path("p/<slug:slug>/rounds/<int:round_id>/close/", rounds.close_round, name="rounds-close"),
]
calibration_urls = [
    path("p/<slug:slug>/calibration/", calibration.calibration_page, name="calibration"),
    path(
        "p/<slug:slug>/calibration/settings/", calibration.calibration_settings, name="calibration-settings"
    ),
    path("p/<slug:slug>/calibration/items/", calibration.calibration_items, name="calibration-items"),
]
discussions_urls = [
    path("mentions/", discussions.mentions, name="mentions"),
    path(
        "p/<slug:slug>/rounds/<int:round_id>/discussion/",
        discussions.round_discussion,
        name="round-discussion",
    ),
    path("p/<slug:slug>/t/<int:trace_id>/discussion/", discussions.trace_discussion, name="trace-discussion"),
    path("p/<slug:slug>/threads/<int:thread_id>/decide/", discussions.decide, name="thread-decide"),
]
proposals_urls = [
    path("p/<slug:slug>/t/<int:trace_id>/proposals/", proposals.trace_proposals, name="trace-proposals"),
    path("p/<slug:slug>/proposals/", proposals.proposals_page, name="proposals"),
    path("p/<slug:slug>/proposals/settle/", proposals.settle, name="proposals-settle"),
]
evolution_urls = [
    path("p/<slug:slug>/codebook/", evolution.codebook, name="codebook"),
    path("p/<slug:slug>/codebook/preview/", evolution.preview, name="codebook-preview"),
    path("p/<slug:slug>/codebook/<int:migration_id>/", evolution.migration_page, name="codebook-migration"),
    path("p/<slug:slug>/codebook/<int:migration_id>/apply/", evolution.apply, name="codebook-apply"),
]
adjudication_urls = [
    path("p/<slug:slug>/adjudication/", adjudication.queue, name="adjudication"),
    path("p/<slug:slug>/adjudication/next/", adjudication.claim_next, name="adjudication-next"),
    path("p/<slug:slug>/adjudication/history/", adjudication.history, name="adjudication-history"),
    path("p/<slug:slug>/adjudication/<int:item_id>/", adjudication.item_page, name="adjudication-item"),
    path(
        "p/<slug:slug>/adjudication/<int:item_id>/steps/", adjudication.item_steps, name="adjudication-steps"
    ),
    path("p/<slug:slug>/adjudication/<int:item_id>/claim/", adjudication.claim, name="adjudication-claim"),
    path(
        "p/<slug:slug>/adjudication/<int:item_id>/release/", adjudication.release, name="adjudication-release"
    ),
    path("p/<slug:slug>/adjudication/<int:item_id>/reopen/", adjudication.reopen, name="adjudication-reopen"),
]
signatures_urls = [
    path("p/<slug:slug>/signatures/", signatures.signatures_page, name="project-signatures"),
    path(
        "p/<slug:slug>/signatures/<str:figure>.csv", signatures.signatures_csv, name="project-signatures-csv"
    ),
]
llm_urls = [
    path("p/<slug:slug>/llm/", llm.llm_page, name="project-llm"),
    path("p/<slug:slug>/llm/config/", llm.save_config, name="project-llm-config"),
    path("p/<slug:slug>/llm/key/", llm.save_key, name="project-llm-key"),
    path("p/<slug:slug>/llm/prompt/", llm.save_prompt, name="project-llm-prompt"),
    path("p/<slug:slug>/llm/runs/", llm.start_run, name="project-llm-start"),
    path("p/<slug:slug>/llm/estimate/", llm.estimate, name="project-llm-estimate"),
    path("p/<slug:slug>/llm/runs/<int:run_id>/", llm.run_status, name="project-llm-run"),
    path(
        "p/<slug:slug>/llm/runs/<int:run_id>/stop/",
        llm.run_action,
        {"action": "stop"},
        name="project-llm-run-stop",
    ),
    path(
        "p/<slug:slug>/llm/runs/<int:run_id>/resume/",
        llm.run_action,
        {"action": "resume"},
        name="project-llm-run-resume",
    ),
    path("p/<slug:slug>/llm/agreement/", llm.agreement, name="project-llm-agreement"),
]
live_urls = [  # the live section of the project page (annotator/live/views.py)
    path("p/<slug:slug>/live/", live.live_section, name="project-live"),
    path("p/<slug:slug>/live/spans/", live.live_spans, name="project-live-spans"),
    path("p/<slug:slug>/live/token/", live.create_ingest_token, name="project-live-token"),
    path("p/<slug:slug>/live/settings/", live.save_live_settings, name="project-live-settings"),
]
triage_urls = [
    path("p/<slug:slug>/triage/", triage.triage_page, name="project-triage"),
    path("p/<slug:slug>/triage/order/", triage.set_order, name="project-triage-order"),
    path("p/<slug:slug>/triage/round/", triage.open_round, name="project-triage-round"),
]
similar_urls = [
    path("p/<slug:slug>/t/<int:trace_id>/similar/", similar.similar_panel, name="trace-similar"),
    path("p/<slug:slug>/t/<int:trace_id>/similar/build/", similar.build, name="trace-similar-build"),
    path("p/<slug:slug>/t/<int:trace_id>/similar/stop/", similar.stop, name="trace-similar-stop"),
]
discovery_urls = [
    path("p/<slug:slug>/discovery/", discovery.discovery_page, name="discovery"),
    path("p/<slug:slug>/discovery/start/", discovery.start, name="discovery-start"),
    path("p/<slug:slug>/discovery/gate/", discovery.start_gate, name="discovery-gate"),
    path("p/<slug:slug>/discovery/<int:run_id>/", discovery.run_page, name="discovery-run"),
    path("p/<slug:slug>/discovery/<int:run_id>/stop/", discovery.stop, name="discovery-stop"),
    path("p/<slug:slug>/discovery/<int:run_id>/resume/", discovery.resume, name="discovery-resume"),
    path("p/<slug:slug>/discovery/<int:run_id>/send/", discovery.send, name="discovery-send"),
    path("p/<slug:slug>/discovery/<int:run_id>/round/", discovery.open_round, name="discovery-round"),
]
# The read-only pages of the two other apps: traces/views.py and taxonomy/views.py.
traces_urls = [
    path("traces/", traces_views.batch_list, name="batch-list"),
]
taxonomy_urls = [
    path("taxonomies/", taxonomy_views.taxonomy_list, name="taxonomy-list"),
    path("taxonomies/<slug:slug>/", taxonomy_views.taxonomy_detail, name="taxonomy-detail"),
]

urlpatterns = [
    *home_urls,
    *system_urls,
    *auth_urls,
    *tokens_urls,
    *projects_urls,
    *new_project_urls,
    *members_urls,
    *imports_urls,
    *outcomes_urls,
    *exports_urls,
    *queue_urls,
    *annotate_urls,
    *trace_urls,
    *review_urls,
    *agreement_urls,
    *rounds_urls,
    *calibration_urls,
    *discussions_urls,
    *proposals_urls,
    *evolution_urls,
    *adjudication_urls,
    *signatures_urls,
    *llm_urls,
    *triage_urls,
    *similar_urls,
    *discovery_urls,
    *live_urls,
    *saved_views_urls,
    *traces_urls,
    *taxonomy_urls,
    # The REST API, its OpenAPI schema (/api/schema/) and docs (/api/docs/): annotator/api/urls.py.
    path("api/", include("annotator.api.urls")),
    path("admin/", admin.site.urls),
]

# Our own error pages (annotator/views/errors.py): the reason in plain words, navigation, no server paths.
handler403 = "annotator.views.errors.forbidden"
handler404 = "annotator.views.errors.not_found"
handler500 = "annotator.views.errors.server_error"
