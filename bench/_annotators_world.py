"""The world of bench/bench_annotators.py: the project it builds before the run (MAST, synthetic traces,
annotators with API tokens, every trace assigned) and the SQL checks of what the run left in it (lost
submissions, traces over their overlap, completed traces still without an adjudication item).
"""

from __future__ import annotations

import time


def build(n_traces: int, overlap: int, n_annotators: int, steps: int) -> tuple[str, list[str], list[str]]:
    """The project, its traces and annotators; returns (slug, API tokens, failure mode codes)."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotator.models import Membership, Project, Role
    from annotator.services.api_tokens import do_issue_token
    from annotator.services.assignment import do_assign
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.models import Batch, Step, Trace

    load_builtin_taxonomies()
    version = resolve_version("mast")
    User = get_user_model()
    with transaction.atomic():
        project = Project.objects.create(
            slug="bench", name="Bench", taxonomy_version=version, overlap=overlap
        )
        batch = Batch.objects.create(name="bench-annotators")
        project.batches.add(batch)
        traces = Trace.objects.bulk_create(
            Trace(
                batch=batch,
                external_id=f"t{i:06d}",
                content_hash=f"{i:064x}",
                task=f"Synthetic task {i}",
                outcome="failure",
                step_count=steps,
            )
            for i in range(n_traces)
        )
        Step.objects.bulk_create(
            (
                Step(
                    trace=trace, index=j, kind="message", role="assistant", content=f"step {j} of {trace.pk}"
                )
                for trace in traces
                for j in range(steps)
            ),
            batch_size=5000,
        )
        users = []
        for i in range(n_annotators):
            user = User(username=f"annotator{i:03d}")
            user.set_unusable_password()  # they use API tokens
            users.append(user)
        users = User.objects.bulk_create(users)
        Membership.objects.bulk_create(
            Membership(project=project, user=user, role=Role.ANNOTATOR) for user in users
        )
    do_assign(project)
    tokens = [do_issue_token(user, name="bench")[1] for user in users]
    codes = list(version.modes.order_by("order").values_list("code", flat=True))
    return project.slug, tokens, codes


def checks(slug: str, submitted: list[int]) -> tuple[int, int, int]:
    """(lost submissions, traces over their overlap in human slots, traces with more submitted annotations
    than the overlap), from SQL."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, overlap FROM annotator_project WHERE slug = %s", [slug])
        project_id, overlap = cursor.fetchone()
        cursor.execute(
            """SELECT a.id FROM annotator_assignment a JOIN annotator_annotation n ON n.assignment_id = a.id
               WHERE a.project_id = %s AND a.status = 'submitted' AND n.status = 'submitted'""",
            [project_id],
        )
        stored = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            """SELECT count(*) FROM (SELECT trace_id FROM annotator_assignment WHERE project_id = %s
               GROUP BY trace_id HAVING count(*) > %s) over""",
            [project_id, overlap],
        )
        over_slots = cursor.fetchone()[0]
        cursor.execute(
            """SELECT count(*) FROM (SELECT a.trace_id FROM annotator_assignment a
               JOIN annotator_annotation n ON n.assignment_id = a.id
               WHERE a.project_id = %s AND n.status = 'submitted'
               GROUP BY a.trace_id HAVING count(*) > %s) over""",
            [project_id, overlap],
        )
        over_submitted = cursor.fetchone()[0]
    return len(set(submitted) - stored), over_slots, over_submitted


def unchecked(slug: str) -> int:
    """Traces whose required annotations are all submitted but that have no adjudication item, from SQL."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM (SELECT a.trace_id FROM annotator_assignment a
               JOIN annotator_annotation n ON n.assignment_id = a.id
               JOIN annotator_project p ON p.id = a.project_id
               WHERE p.slug = %s AND n.status = 'submitted'
               AND NOT EXISTS (SELECT 1 FROM annotator_adjudicationitem i
                               WHERE i.project_id = a.project_id AND i.trace_id = a.trace_id)
               GROUP BY a.trace_id, p.overlap HAVING count(*) >= p.overlap) waiting""",
            [slug],
        )
        return cursor.fetchone()[0]


def wait_for_checks(slug: str, timeout: float = 60.0) -> tuple[int, float]:
    """(traces still without their adjudication check, seconds waited) once the worker has caught up or
    `timeout` passed: every completed trace must reach the queue, however the checks are batched."""
    started = time.monotonic()
    left = unchecked(slug)
    while left and time.monotonic() - started < timeout:
        time.sleep(0.2)
        left = unchecked(slug)
    return left, time.monotonic() - started
