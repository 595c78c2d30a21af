"""The URL map is a promise: users bookmark pages, scripts call the API, templates and code `reverse()` names.

Every (path pattern, name) pair below was recorded from `get_resolver()` before the URL files were reshaped
into one file per surface (annotator/urls.py for pages, annotator/api/urls.py for the API). A route that
changes path or name, disappears or appears fails here: add new routes to the table on purpose.
"""

from __future__ import annotations

import re

from django.urls import URLResolver, get_resolver, resolve, reverse

# Django's admin is left out: its routes follow the registered models, not this project's URL files.
ROUTES = [
    ("", "home"),
    ("account/tokens/", "account-tokens"),
    ("account/tokens/<int:token_id>/revoke/", "account-token-revoke"),
    ("account/tokens/new/", "account-token-create"),
    ("account/tokens/p/<slug:slug>/new/", "project-token-create"),
    ("account/tokens/revoke-all/", "account-tokens-revoke-all"),
    ("accounts/login/", "login"),
    ("accounts/logout/", "logout"),
    ("accounts/set-password/<uidb64>/<token>/", "password-set"),
    ("accounts/set-password/done/", "password-set-done"),
    ("api/", "api-root"),
    ("api/<drf_format_suffix:format>", "api-root"),
    ("api/^projects/$", "api-project-list"),
    ("api/^projects/(?P<slug>[^/.]+)/$", "api-project-detail"),
    ("api/^projects/(?P<slug>[^/.]+)\\.(?P<format>[a-z0-9]+)/?$", "api-project-detail"),
    ("api/^projects\\.(?P<format>[a-z0-9]+)/?$", "api-project-list"),
    ("api/^taxonomies/$", "api-taxonomy-list"),
    ("api/^taxonomies/(?P<slug>[^/.]+)/$", "api-taxonomy-detail"),
    ("api/^taxonomies/(?P<slug>[^/.]+)\\.(?P<format>[a-z0-9]+)/?$", "api-taxonomy-detail"),
    ("api/^taxonomies\\.(?P<format>[a-z0-9]+)/?$", "api-taxonomy-list"),
    ("api/docs/", "api-docs"),
    ("api/projects/<slug:slug>/adjudication/", "api-adjudication"),
    ("api/projects/<slug:slug>/adjudication/<int:item_id>/", "api-adjudication-item"),
    ("api/projects/<slug:slug>/adjudication/<int:item_id>/decide/", "api-adjudication-decide"),
    ("api/projects/<slug:slug>/adjudication/<int:item_id>/reopen/", "api-adjudication-reopen"),
    ("api/projects/<slug:slug>/adjudication/claim/", "api-adjudication-claim"),
    ("api/projects/<slug:slug>/agreement/", "api-agreement"),
    ("api/projects/<slug:slug>/archive/", "api-project-archive"),
    ("api/projects/<slug:slug>/assignments/", "api-my-assignments"),
    ("api/projects/<slug:slug>/assignments/<int:assignment_id>/annotation/", "api-my-annotation"),
    ("api/projects/<slug:slug>/assignments/<int:assignment_id>/llm-labels/", "api-llm-labels"),
    ("api/projects/<slug:slug>/assignments/<int:assignment_id>/skip/", "api-skip"),
    ("api/projects/<slug:slug>/assignments/<int:assignment_id>/submit/", "api-submit"),
    ("api/projects/<slug:slug>/assignments/next/", "api-claim-next"),
    ("api/projects/<slug:slug>/batches/", "api-project-batches"),
    ("api/projects/<slug:slug>/exports/", "api-export-start"),
    ("api/projects/<slug:slug>/exports/<int:export_id>/", "api-export-status"),
    ("api/projects/<slug:slug>/exports/labels/", "api-export-labels"),
    ("api/projects/<slug:slug>/imports/", "api-import-start"),
    ("api/projects/<slug:slug>/imports/<int:job_id>/", "api-import-status"),
    ("api/projects/<slug:slug>/label-imports/", "api-label-import"),
    ("api/projects/<slug:slug>/live/", "api-live-settings"),
    ("api/projects/<slug:slug>/otlp/v1/logs", "api-otlp-logs"),
    ("api/projects/<slug:slug>/otlp/v1/traces", "api-otlp-traces"),
    ("api/projects/<slug:slug>/llm-agreement/", "api-llm-agreement"),
    ("api/projects/<slug:slug>/llm-runs/", "api-llm-runs"),
    ("api/projects/<slug:slug>/llm-runs/<int:run_id>/", "api-llm-run"),
    ("api/projects/<slug:slug>/llm-runs/<int:run_id>/resume/", "api-llm-run-resume"),
    ("api/projects/<slug:slug>/llm-runs/<int:run_id>/stop/", "api-llm-run-stop"),
    ("api/projects/<slug:slug>/llm-runs/preview/", "api-llm-run-preview"),
    ("api/projects/<slug:slug>/llm-settings/", "api-llm-settings"),
    ("api/projects/<slug:slug>/llm-settings/key/", "api-llm-key"),
    ("api/projects/<slug:slug>/llm-settings/prompt/", "api-llm-prompt"),
    ("api/projects/<slug:slug>/members/", "api-members"),
    ("api/projects/<slug:slug>/members/<int:membership_id>/", "api-member"),
    ("api/projects/<slug:slug>/proposals/", "api-proposals"),
    ("api/projects/<slug:slug>/proposals/settle/", "api-proposals-settle"),
    ("api/projects/<slug:slug>/traces/<int:trace_id>/proposals/", "api-trace-proposals"),
    ("api/projects/<slug:slug>/rounds/", "api-rounds"),
    ("api/projects/<slug:slug>/triage/", "api-triage"),
    ("api/projects/<slug:slug>/triage/round/", "api-triage-round"),
    ("api/projects/<slug:slug>/similar/", "api-similar"),
    ("api/projects/<slug:slug>/similar/stop/", "api-similar-stop"),
    ("api/projects/<slug:slug>/discovery/", "api-discovery"),
    ("api/projects/<slug:slug>/discovery/estimate/", "api-discovery-estimate"),
    ("api/projects/<slug:slug>/discovery/gate/", "api-discovery-gate"),
    ("api/projects/<slug:slug>/discovery/<int:run_id>/", "api-discovery-run"),
    ("api/projects/<slug:slug>/discovery/<int:run_id>/stop/", "api-discovery-stop"),
    ("api/projects/<slug:slug>/discovery/<int:run_id>/resume/", "api-discovery-resume"),
    ("api/projects/<slug:slug>/discovery/<int:run_id>/send/", "api-discovery-send"),
    ("api/projects/<slug:slug>/discovery/<int:run_id>/round/", "api-discovery-round"),
    ("p/<slug:slug>/discovery/", "discovery"),
    ("p/<slug:slug>/discovery/start/", "discovery-start"),
    ("p/<slug:slug>/discovery/gate/", "discovery-gate"),
    ("p/<slug:slug>/discovery/<int:run_id>/", "discovery-run"),
    ("p/<slug:slug>/discovery/<int:run_id>/stop/", "discovery-stop"),
    ("p/<slug:slug>/discovery/<int:run_id>/resume/", "discovery-resume"),
    ("p/<slug:slug>/discovery/<int:run_id>/send/", "discovery-send"),
    ("p/<slug:slug>/discovery/<int:run_id>/round/", "discovery-round"),
    ("api/projects/<slug:slug>/calibration/", "api-calibration"),
    ("api/projects/<slug:slug>/calibration/items/", "api-calibration-items"),
    ("api/projects/<slug:slug>/assignments/<int:assignment_id>/gold/", "api-calibration-gold"),
    ("api/projects/<slug:slug>/rounds/<int:round_id>/close/", "api-rounds-close"),
    ("api/projects/<slug:slug>/rounds/trend/", "api-rounds-trend"),
    ("api/projects/<slug:slug>/rounds/<int:round_id>/threads/", "api-round-threads"),
    ("api/projects/<slug:slug>/threads/<int:thread_id>/decision/", "api-thread-decide"),
    ("api/projects/<slug:slug>/settings/", "api-project-settings"),
    ("api/projects/<slug:slug>/signatures/", "api-signatures"),
    ("api/projects/<slug:slug>/traces/", "api-project-traces"),
    ("api/projects/<slug:slug>/views/", "api-views"),
    ("api/projects/<slug:slug>/views/<int:view_id>/", "api-view"),
    ("api/projects/<slug:slug>/traces/<int:trace_id>/", "api-trace"),
    ("api/projects/<slug:slug>/traces/<int:trace_id>/annotations/", "api-trace-annotations"),
    ("api/projects/<slug:slug>/traces/<int:trace_id>/search/", "api-trace-search"),
    ("api/projects/<slug:slug>/traces/<int:trace_id>/steps/", "api-trace-steps"),
    ("api/projects/<slug:slug>/taxonomy-migrations/", "api-taxonomy-migrations"),
    ("api/projects/<slug:slug>/taxonomy-migrations/<int:migration_id>/", "api-taxonomy-migration"),
    (
        "api/projects/<slug:slug>/taxonomy-migrations/<int:migration_id>/apply/",
        "api-taxonomy-migration-apply",
    ),
    ("api/schema/", "api-schema"),
    ("api/token/", "api-token"),
    ("api/tokens/", "api-tokens"),
    ("api/tokens/<int:token_id>/", "api-token-revoke"),
    ("healthz", "healthz"),
    ("mentions/", "mentions"),
    ("p/<slug:slug>/", "project-detail"),
    ("p/<slug:slug>/outcomes/", "project-outcomes"),
    ("p/<slug:slug>/outcomes/import/", "project-outcomes-import"),
    ("api/projects/<slug:slug>/outcomes/", "api-outcomes-import"),
    ("p/<slug:slug>/a/<int:assignment_id>/", "annotate"),
    ("p/<slug:slug>/a/<int:assignment_id>/save/", "annotate-save"),
    ("p/<slug:slug>/a/<int:assignment_id>/skip/", "annotate-skip"),
    ("p/<slug:slug>/a/<int:assignment_id>/submit/", "annotate-submit"),
    ("p/<slug:slug>/adjudication/", "adjudication"),
    ("p/<slug:slug>/adjudication/<int:item_id>/", "adjudication-item"),
    ("p/<slug:slug>/adjudication/<int:item_id>/claim/", "adjudication-claim"),
    ("p/<slug:slug>/adjudication/<int:item_id>/release/", "adjudication-release"),
    ("p/<slug:slug>/adjudication/<int:item_id>/reopen/", "adjudication-reopen"),
    ("p/<slug:slug>/adjudication/<int:item_id>/steps/", "adjudication-steps"),
    ("p/<slug:slug>/adjudication/history/", "adjudication-history"),
    ("p/<slug:slug>/adjudication/next/", "adjudication-next"),
    ("p/<slug:slug>/agreement/", "agreement"),
    ("p/<slug:slug>/agreement/<int:report_id>/", "agreement-report"),
    ("p/<slug:slug>/agreement/<int:report_id>/report.csv", "agreement-csv"),
    ("p/<slug:slug>/agreement/<int:report_id>/report.json", "agreement-json"),
    ("p/<slug:slug>/agreement/refresh/", "agreement-refresh"),
    ("p/<slug:slug>/archive/", "project-archive"),
    ("p/<slug:slug>/batches/attach/", "project-batch-attach"),
    ("p/<slug:slug>/codebook/", "codebook"),
    ("p/<slug:slug>/codebook/<int:migration_id>/", "codebook-migration"),
    ("p/<slug:slug>/codebook/<int:migration_id>/apply/", "codebook-apply"),
    ("p/<slug:slug>/codebook/preview/", "codebook-preview"),
    ("p/<slug:slug>/export/", "project-export"),
    ("p/<slug:slug>/export/<int:export_id>/", "project-export-job"),
    ("p/<slug:slug>/export/<int:export_id>/download/", "project-export-download"),
    ("p/<slug:slug>/export/labels/", "project-export-labels"),
    ("p/<slug:slug>/import/", "project-import"),
    ("p/<slug:slug>/import/<int:job_id>/", "project-import-job"),
    ("p/<slug:slug>/llm/", "project-llm"),
    ("p/<slug:slug>/llm/agreement/", "project-llm-agreement"),
    ("p/<slug:slug>/triage/", "project-triage"),
    ("p/<slug:slug>/triage/order/", "project-triage-order"),
    ("p/<slug:slug>/triage/round/", "project-triage-round"),
    ("p/<slug:slug>/live/", "project-live"),
    ("p/<slug:slug>/live/settings/", "project-live-settings"),
    ("p/<slug:slug>/live/spans/", "project-live-spans"),
    ("p/<slug:slug>/live/token/", "project-live-token"),
    ("p/<slug:slug>/llm/config/", "project-llm-config"),
    ("p/<slug:slug>/llm/estimate/", "project-llm-estimate"),
    ("p/<slug:slug>/llm/key/", "project-llm-key"),
    ("p/<slug:slug>/llm/prompt/", "project-llm-prompt"),
    ("p/<slug:slug>/llm/runs/", "project-llm-start"),
    ("p/<slug:slug>/llm/runs/<int:run_id>/", "project-llm-run"),
    ("p/<slug:slug>/llm/runs/<int:run_id>/resume/", "project-llm-run-resume"),
    ("p/<slug:slug>/llm/runs/<int:run_id>/stop/", "project-llm-run-stop"),
    ("p/<slug:slug>/members/", "project-members"),
    ("p/<slug:slug>/members/<int:membership_id>/remove/", "project-member-remove"),
    ("p/<slug:slug>/members/<int:membership_id>/role/", "project-member-role"),
    ("p/<slug:slug>/members/add/", "project-member-add"),
    ("p/<slug:slug>/next/", "start-next"),
    ("p/<slug:slug>/mine/", "my-assignments"),
    ("p/<slug:slug>/proposals/", "proposals"),
    ("p/<slug:slug>/proposals/settle/", "proposals-settle"),
    ("p/<slug:slug>/rounds/", "rounds"),
    ("p/<slug:slug>/calibration/", "calibration"),
    ("p/<slug:slug>/calibration/settings/", "calibration-settings"),
    ("p/<slug:slug>/calibration/items/", "calibration-items"),
    ("p/<slug:slug>/rounds/<int:round_id>/close/", "rounds-close"),
    ("p/<slug:slug>/rounds/<int:round_id>/discussion/", "round-discussion"),
    ("p/<slug:slug>/rounds/open/", "rounds-open"),
    ("p/<slug:slug>/settings/", "project-settings"),
    ("p/<slug:slug>/signatures/", "project-signatures"),
    ("p/<slug:slug>/signatures/<str:figure>.csv", "project-signatures-csv"),
    ("p/<slug:slug>/t/<int:trace_id>/discussion/", "trace-discussion"),
    ("p/<slug:slug>/t/<int:trace_id>/proposals/", "trace-proposals"),
    ("p/<slug:slug>/t/<int:trace_id>/similar/", "trace-similar"),
    ("p/<slug:slug>/t/<int:trace_id>/similar/build/", "trace-similar-build"),
    ("p/<slug:slug>/t/<int:trace_id>/similar/stop/", "trace-similar-stop"),
    ("p/<slug:slug>/t/<int:trace_id>/review/", "trace-review"),
    ("p/<slug:slug>/t/<int:trace_id>/review/steps/", "trace-review-steps"),
    ("p/<slug:slug>/t/<int:trace_id>/steps/", "trace-steps"),
    ("p/<slug:slug>/t/<int:trace_id>/steps/<int:index>/", "trace-step"),
    ("p/<slug:slug>/threads/<int:thread_id>/decide/", "thread-decide"),
    ("p/<slug:slug>/traces/", "project-traces"),
    ("p/<slug:slug>/traces/csv/", "project-traces-csv"),
    ("p/<slug:slug>/views/", "project-view-save"),
    ("p/<slug:slug>/views/<int:view_id>/", "project-view"),
    ("p/<slug:slug>/views/<int:view_id>/delete/", "project-view-delete"),
    ("p/<slug:slug>/views/<int:view_id>/rename/", "project-view-rename"),
    ("p/<slug:slug>/views/<int:view_id>/round/", "project-view-round"),
    ("projects/new/", "project-new"),
    ("taxonomies/", "taxonomy-list"),
    ("taxonomies/<slug:slug>/", "taxonomy-detail"),
    ("traces/", "batch-list"),
]


def _walk(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern.name


def _routes() -> list[tuple[str, str | None]]:
    return sorted(
        ((path, name) for path, name in _walk(get_resolver().url_patterns) if not path.startswith("admin/")),
        key=lambda row: (row[0], row[1] or ""),
    )


def test_every_path_and_name_is_unchanged():
    assert _routes() == sorted(ROUTES, key=lambda row: (row[0], row[1] or ""))


def test_the_admin_is_still_mounted_at_admin():
    assert reverse("admin:index") == "/admin/"


_SAMPLE = {"slug": "demo", "figure": "prevalence"}


def test_each_named_page_resolves_to_its_own_route():
    """No pattern shadows another: reversing a name and resolving the URL gives the same name back."""
    for path, name in _walk(get_resolver().url_patterns):
        if path.startswith("admin/") or name is None or "format" in path or "^" in path:
            continue
        kwargs = {key: _SAMPLE.get(key, 7) for key in re.findall(r"<(?:\w+:)?(\w+)>", path)}
        url = reverse(name, kwargs=kwargs)
        assert resolve(url).url_name == name, (url, name)
