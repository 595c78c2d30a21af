"""Pages under /p/<slug>/ for agreement, calibration rounds and adjudication (owners, adjudicators; the report also viewers)."""

from django.urls import path

from annotator.views import adjudication, agreement, discussions, evolution, proposals, rounds

urlpatterns = [
    path("agreement/", agreement.agreement, name="agreement"),
    path("agreement/refresh/", agreement.refresh, name="agreement-refresh"),
    path("agreement/<int:report_id>/", agreement.report_status, name="agreement-report"),
    path("agreement/<int:report_id>/report.json", agreement.report_json, name="agreement-json"),
    path("agreement/<int:report_id>/report.csv", agreement.report_csv, name="agreement-csv"),
    path("rounds/", rounds.rounds_page, name="rounds"),
    path("rounds/open/", rounds.open_round, name="rounds-open"),
    path("rounds/<int:round_id>/close/", rounds.close_round, name="rounds-close"),
    path("rounds/<int:round_id>/discussion/", discussions.round_discussion, name="round-discussion"),
    path("t/<int:trace_id>/discussion/", discussions.trace_discussion, name="trace-discussion"),
    path("threads/<int:thread_id>/decide/", discussions.decide, name="thread-decide"),
    path("t/<int:trace_id>/proposals/", proposals.trace_proposals, name="trace-proposals"),
    path("proposals/", proposals.proposals_page, name="proposals"),
    path("proposals/settle/", proposals.settle, name="proposals-settle"),
    path("codebook/", evolution.codebook, name="codebook"),
    path("codebook/preview/", evolution.preview, name="codebook-preview"),
    path("codebook/<int:migration_id>/", evolution.migration_page, name="codebook-migration"),
    path("codebook/<int:migration_id>/apply/", evolution.apply, name="codebook-apply"),
    path("adjudication/", adjudication.queue, name="adjudication"),
    path("adjudication/next/", adjudication.claim_next, name="adjudication-next"),
    path("adjudication/history/", adjudication.history, name="adjudication-history"),
    path("adjudication/<int:item_id>/", adjudication.item_page, name="adjudication-item"),
    path("adjudication/<int:item_id>/steps/", adjudication.item_steps, name="adjudication-steps"),
    path("adjudication/<int:item_id>/claim/", adjudication.claim, name="adjudication-claim"),
    path("adjudication/<int:item_id>/release/", adjudication.release, name="adjudication-release"),
    path("adjudication/<int:item_id>/reopen/", adjudication.reopen, name="adjudication-reopen"),
]
