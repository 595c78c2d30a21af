"""API routes under /api/projects/<slug>/ for the agreement report, calibration rounds and the adjudication queue."""

from django.urls import path

from annotator.api import adjudication, agreement, evolution, rounds

urlpatterns = [
    path("agreement/", agreement.agreement, name="api-agreement"),
    path("rounds/", rounds.rounds, name="api-rounds"),
    path("rounds/<int:round_id>/close/", rounds.close, name="api-rounds-close"),
    path("taxonomy-migrations/", evolution.migrations, name="api-taxonomy-migrations"),
    path("taxonomy-migrations/<int:migration_id>/", evolution.migration, name="api-taxonomy-migration"),
    path(
        "taxonomy-migrations/<int:migration_id>/apply/", evolution.apply, name="api-taxonomy-migration-apply"
    ),
    path("adjudication/", adjudication.queue, name="api-adjudication"),
    path("adjudication/claim/", adjudication.claim_next, name="api-adjudication-claim"),
    path("adjudication/<int:item_id>/", adjudication.item, name="api-adjudication-item"),
    path("adjudication/<int:item_id>/decide/", adjudication.decide, name="api-adjudication-decide"),
    path("adjudication/<int:item_id>/reopen/", adjudication.reopen, name="api-adjudication-reopen"),
]
