"""The world of bench_trace_search.py: N traces x 20 steps written with COPY and one INSERT ... SELECT, with
two submitted human annotations per trace, LLM labels on a fifth, gold or an open adjudication item, and a
tenth of the traces unassigned (the bench's docstring says what each query meets); then the search's
indexing task over all of it."""

from __future__ import annotations

import numpy as np
from bench_signatures import copy_rows

MODELS = ("gpt-4o", "claude-3.5-sonnet", "llama-3-70b")
SYSTEMS = ("MetaGPT", "AG2")
BENCHMARKS = ("ITBench", "GAIA", "SWE-bench")
TOOLS = ("kubectl", "bash", "python", "search")
TRACE_COLUMNS = (
    "batch_id",
    "external_id",
    "content_hash",
    "model",
    "system",
    "benchmark",
    "outcome",
    "score",
    "step_count",
    "metadata",
)


def insert_world(n: int, seed: int):
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator.models import (
        AdjudicationItem,
        Annotation,
        Assignment,
        GoldLabel,
        LabelApplication,
        Membership,
        Project,
    )
    from annotator.raters import get_llm_rater
    from taxonomy.models import FailureMode
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.models import Batch, Trace

    rng = np.random.default_rng(seed)
    load_builtin_taxonomies()
    version = resolve_version("mast")
    modes = list(FailureMode.objects.filter(version=version).order_by("order"))
    mode_ids = np.array([m.pk for m in modes])
    by_code = {m.code: m.pk for m in modes}
    now = timezone.now()
    users = get_user_model()
    with transaction.atomic():
        owner = users.objects.create(username="bench-owner")
        ana, ben = users.objects.create(username="ana"), users.objects.create(username="ben")
        llm = get_llm_rater("bench-model")
        project = Project.objects.create(slug="bench", name="Bench", taxonomy_version=version)
        Membership.objects.create(project=project, user=owner, role="owner")
        for user in (ana, ben):
            Membership.objects.create(project=project, user=user, role="annotator")
        batches = [Batch.objects.create(name=name) for name in ("before", "after")]
        project.batches.add(*batches)
        batch = rng.integers(0, 2, n)
        model = rng.integers(0, len(MODELS), n)
        score = rng.random(n)
        splits = ("train", "dev", "test")
        trace_ids = copy_rows(
            Trace(batch=batches[0], created_at=now),
            TRACE_COLUMNS,
            (
                (
                    batches[batch[i]].pk,
                    f"t{i:07d}",
                    f"bench-{i}",
                    MODELS[model[i]],
                    SYSTEMS[i % 2],
                    BENCHMARKS[i % 3],
                    "failure" if score[i] < 0.6 else "success",
                    float(score[i]),
                    20,
                    f'{{"split": "{splits[i % 3]}"}}',
                )
                for i in range(n)
            ),
            n,
        )
        first, last = int(trace_ids[0]), int(trace_ids[-1])
        with connection.cursor() as cursor:
            # Content: a few words of a 40-word vocabulary (hashes pick them, so it is the same every run)
            # plus a unique token; a tool call every fourth step.
            cursor.execute(
                """
                WITH vocab AS (SELECT ARRAY['the','pod','restarts','deploy','check','logs','error','retry',
                    'timeout','rollback','namespace','production','staging','delete','kubectl','apply',
                    'config','service','scale','replica','agent','plan','verify','answer','search','result',
                    'file','test','patch','commit','build','failed','passed','user','task','tool','call',
                    'output','memory','cache'] AS w)
                INSERT INTO traces_step (trace_id, index, parent_index, depth, agent, role, kind, content,
                                         tool_name, tool_args, tool_call_id, timestamp, tokens, duration_ms)
                SELECT t.id, g.i, NULL, 0, (ARRAY['planner','coder','executor','verifier'])[g.i %% 4 + 1], '',
                       CASE WHEN g.i %% 4 = 3 THEN 'tool_call' ELSE 'message' END,
                       v.w[1 + abs(hashtext(t.id || ':' || g.i)) %% 40] || ' ' ||
                       v.w[1 + abs(hashtext(g.i || ':' || t.id)) %% 40] || ' ' ||
                       v.w[1 + abs(hashtext(t.id || '-' || g.i)) %% 40] || ' step ' || g.i || ' of run ' ||
                       md5(t.id || '/' || g.i),
                       CASE WHEN g.i %% 4 = 3 THEN (ARRAY['kubectl','bash','python','search'])[1 + t.id %% 4]
                            ELSE '' END,
                       CASE WHEN g.i %% 4 = 3 THEN jsonb_build_object('cmd', 'get pods -n ' ||
                            (ARRAY['prod','staging','dev'])[1 + (t.id + g.i) %% 3]) END,
                       '', '', NULL, NULL
                FROM traces_trace t CROSS JOIN LATERAL generate_series(0, 19) AS g(i) CROSS JOIN vocab v
                WHERE t.id BETWEEN %s AND %s
                """,
                [first, last],
            )
        # A tenth unassigned; a tenth with only ana's open slot; the rest with two submitted annotations.
        labelled = np.arange(n) % 10 >= 2
        started = np.arange(n) % 10 == 1
        human = np.nonzero(labelled)[0]
        slots = [(int(trace_ids[i]), user.pk, "submitted") for i in human for user in (ana, ben)]
        slots += [(int(trace_ids[i]), ana.pk, "pending") for i in np.nonzero(started)[0]]
        llm_traces = human[human % 5 == 2]
        slots += [(int(trace_ids[i]), llm.pk, "submitted") for i in llm_traces]
        assignment_ids = copy_rows(
            Assignment(project=project, trace_id=0, annotator=owner, created_at=now, updated_at=now),
            ("trace_id", "annotator_id", "status"),
            iter(slots),
            len(slots),
        )
        submitted = [k for k, slot in enumerate(slots) if slot[2] == "submitted"]
        annotation_ids = copy_rows(
            Annotation(assignment_id=0, status="submitted", submitted_at=now, created_at=now, updated_at=now),
            ("assignment_id",),
            ((int(assignment_ids[k]),) for k in submitted),
            len(submitted),
        )
        # One or two modes per annotation; ben disagrees with ana on a fifth of the traces.
        first_mode = rng.integers(0, len(modes), n)
        labels = []
        for a, k in zip(annotation_ids.tolist(), submitted, strict=True):
            trace_index = int(slots[k][0] - first)
            code = int(first_mode[trace_index])
            if slots[k][1] == ben.pk and trace_index % 5 == 0:
                code = (code + 1) % len(modes)
            labels.append((a, int(mode_ids[code]), f'[{{"step": {3 + 4 * (trace_index % 4)}}}]'))
        copy_rows(
            LabelApplication(annotation_id=0, mode=modes[0], evidence=[]),
            ("annotation_id", "mode_id", "evidence"),
            iter(labels),
            len(labels),
        )
        items = [(int(trace_ids[i]), "open" if i % 5 == 0 else "agreed") for i in human]
        item_ids = copy_rows(
            AdjudicationItem(project=project, trace_id=0, created_at=now, updated_at=now),
            ("trace_id", "status"),
            iter(items),
            len(items),
        )
        gold = [
            (int(item_ids[k]), int(mode_ids[first_mode[i]]))
            for k, i in enumerate(human.tolist())
            if items[k][1] == "agreed"
        ]
        copy_rows(
            GoldLabel(item_id=0, mode=modes[0], source="agreed", decided_at=now, evidence=[]),
            ("item_id", "mode_id"),
            iter(gold),
            len(gold),
        )
        assert by_code  # the modes the queries name exist in MAST
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE") if connection.connection.autocommit else cursor.execute("ANALYZE")
    return project


def index_world() -> int:
    """The indexing task over the whole world (every trace is pending after its COPY), then ANALYZE."""
    from django.db import connection

    from annotator.search.indexing import index_pending

    indexed = index_pending()
    # VACUUM as autovacuum does after a large insert: a one-word search reads traces_traceword by
    # index-only scans, which need the visibility map.
    analyze = "VACUUM ANALYZE" if connection.connection.autocommit else "ANALYZE"
    with connection.cursor() as cursor:
        for table in ("traces_stepsearch", "traces_searchpending", "traces_traceword", "traces_tracesearch"):
            cursor.execute(f"{analyze} {table}")
    return indexed
