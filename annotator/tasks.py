"""Thin Celery wrappers: take ids, call a service. Idempotent, so a retried or duplicated task is harmless.

Tasks import services; services never import this module (they send tasks by name through
annotator.services.enqueue). Every task here is registered when Django starts (AnnotatorConfig.ready);
each imports its service when it runs, so that registering them does not load the export, report and LLM
code (and pyarrow) into every management command and web process at start-up.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

log = logging.getLogger(__name__)

# Only a database that is briefly unreachable is worth retrying; any other error is recorded on the
# job's row by the service (retrying a bug just repeats it).
RETRY_ON_DATABASE_OUTAGE = {
    "acks_late": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "max_retries": 3,
}


@shared_task(name="annotator.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> str:
    from annotator.services.imports import do_run_import_job

    return do_run_import_job(job_id).status


@shared_task(name="annotator.search.index_pending", **RETRY_ON_DATABASE_OUTAGE)
def index_search_pending() -> int:
    """Write the full-text search rows of the traces imported since the last run (idempotent)."""
    from annotator.search.indexing import index_pending

    return index_pending()


@shared_task(name="annotator.similar.build", acks_late=True)
def build_similar_traces(build_id: int) -> str:
    """Build a project's trace representation for similar traces (annotator.similar.service; idempotent)."""
    from annotator.similar.service import do_build

    return do_build(build_id).status


@shared_task(name="annotator.similar.update", **RETRY_ON_DATABASE_OUTAGE)
def update_similar_traces(project_id: int) -> int:
    """The vectors of a project's traces imported since the last build or update (idempotent)."""
    from annotator.similar.service import do_update

    return do_update(project_id)


@shared_task(name="annotator.agreement.compute_report", **RETRY_ON_DATABASE_OUTAGE)
def compute_agreement_report(report_id: int) -> str:
    from annotator.services.reports import do_compute_report

    return do_compute_report(report_id).status


@shared_task(name="annotator.agreement.refresh_reports", **RETRY_ON_DATABASE_OUTAGE)
def refresh_agreement_reports(project_id: int) -> str:
    """The debounced recompute scheduled by services.reports.schedule_report_refresh: the agreement
    report, then the default failure signatures, so both pages answer from stored results."""
    from annotator.services.reports import do_refresh_reports
    from annotator.services.signatures.report import do_refresh_signatures

    report = do_refresh_reports(project_id)
    do_refresh_signatures(project_id)
    return report.status if report else "no-project"


@shared_task(name="annotator.triage.refresh_ranks", **RETRY_ON_DATABASE_OUTAGE)
def refresh_triage_ranks(project_id: int) -> int:
    """Rewrite the project's LLM triage queue ranks (annotator.triage.service; idempotent)."""
    from annotator.triage.service import do_refresh_ranks

    return do_refresh_ranks(project_id)


@shared_task(name="annotator.adjudication.check_traces", **RETRY_ON_DATABASE_OUTAGE)
def check_traces_for_adjudication(project_id: int, trace_ids: list[int]) -> int:
    """Compare the submitted annotations of these traces: agreed -> gold, disagreement -> queue."""
    from annotator.services.adjudication import do_check_traces

    return do_check_traces(project_id, trace_ids)


@shared_task(name="annotator.adjudication.collect", acks_late=True)
def collect_adjudication_checks(project_id: int) -> int:
    """Send the traces collected for the project's adjudication check since the last collection."""
    from annotator.services.followups import collect_pending

    return collect_pending(project_id)


@shared_task(name="annotator.llm.run", acks_late=True)
def run_llm_job(run_id: int) -> str:
    """Label a slice of an LLM run (LLM_TASK_SECONDS), then re-enqueue itself while traces remain.

    Only the run id travels: the endpoint key is read inside the worker. Idempotent: finished traces have
    result rows and are skipped, so a redelivered task (a worker lost mid-slice) just carries on. A task
    that finds the run held by another worker looks again a minute later, so a run whose worker died
    resumes once that worker's lock expires.
    """
    from annotator.services.llm.process import do_process_run

    result = do_process_run(run_id, budget_seconds=settings.LLM_TASK_SECONDS)
    if result.more:
        run_llm_job.delay(run_id)
    elif result.busy and not settings.CELERY_TASK_ALWAYS_EAGER:
        run_llm_job.apply_async((run_id,), countdown=60)
    return "busy" if result.busy else result.run.status


@shared_task(name="annotator.llm.discovery", acks_late=True)
def run_discovery_job(run_id: int) -> str:
    """Carry a discovery or gate run through its phases (on the LLM queue). Idempotent: every model answer
    is a row keyed by what it answers, so a redelivered task asks only what has no row yet."""
    from annotator.discovery.process import do_process_discovery

    return do_process_discovery(run_id).status


@shared_task(name="annotator.exports.run", acks_late=True)
def run_export_job(export_id: int) -> str:
    """Build (and push) one export. Only the export id travels: a typed Hub token waits in the cache and is
    read once inside the service, so it is never in the task message or a worker's log."""
    from annotator.services.exports import do_run_export

    return do_run_export(export_id).status


@shared_task(name="annotator.jobs.reconcile")
def reconcile_jobs() -> dict:
    """Run by Celery beat every JOB_RECONCILE_SECONDS: re-send, resume or fail jobs; re-check traces.

    Not retried: the next beat is the retry, so an unreachable database is a warning, not a traceback."""
    from annotator.services.jobs import do_reconcile

    try:
        return do_reconcile().as_dict()
    except OperationalError as error:
        log.warning("job reconciliation skipped, the database is unreachable: %s", error)
        return {"skipped": str(error)}


@shared_task(name="annotator.live.assemble", **RETRY_ON_DATABASE_OUTAGE)
def assemble_live_traces(project_id: int) -> int:
    """Assemble the project's live traces that are complete (annotator/live/service.py). Each request sends
    one, due when its spans have been quiet for OTLP_TRACE_QUIET_SECONDS, so the last span of a trace
    brings the task that finds it complete."""
    from annotator.live.assembly import do_assemble_due

    return do_assemble_due(project_id)


@shared_task(name="annotator.live.sweep")
def sweep_live_traces() -> int:
    """Run by Celery beat: assemble live traces whose task was lost (a worker restart, a broker outage)."""
    from annotator.live.assembly import do_sweep

    try:
        return do_sweep()
    except OperationalError as error:
        log.warning("live trace sweep skipped, the database is unreachable: %s", error)
        return 0
