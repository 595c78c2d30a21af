"""The `make run` demo: generated traces (no external data needed) in a MAST project with four users.

A newcomer should see the whole loop on first run, so the demo starts part-way through it: the two
annotators have labelled the first three fifths of the traces (alice a few more, which wait for bob), the
comparison has put the disagreements in the adjudication queue and the agreements in the gold, and the
adjudicator has decided a few disputes. Everything is done by the product's own verbs, as the pages would do
it (claim the next trace, save a draft, submit; claim the next dispute, decide), from readings of the traces'
own symptoms (`annotator.demo_readings`), so the agreement report, the queue, the gold and the signatures
show what those verbs compute. The rest of the traces are left for the annotators to label.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotator.demo_readings import STRICT, DemoStep, Habits, Reading, adjudicate, findings, read_trace
from annotator.models import AdjudicationItem, Annotation, Assignment, Membership, Project, SavedView
from annotator.search.filters import TraceFilter
from annotator.services import adjudication
from annotator.services.annotations import do_save_draft, do_submit_annotation
from annotator.services.assignment import do_assign, do_claim_next
from annotator.services.comparison import item_annotations
from annotator.services.gold import Decision, ModeDecision, do_decide
from annotator.services.imports import do_import_traces
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput
from annotator.services.reports import do_refresh_reports
from annotator.services.signatures.report import do_refresh_signatures
from taxonomy.services import load_builtin_taxonomies, resolve_version
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch, Step, Trace

DEMO_PROJECT = "demo"
DEMO_BATCH = "demo-synthetic"
# Fixed, printed passwords: this is a local demo, never a deployment (docker-compose does not seed it).
DEMO_USERS = [
    ("owner", "owner-demo-pass", "owner"),
    ("alice", "alice-demo-pass", "annotator"),
    ("bob", "bob-demo-pass", "annotator"),
    ("carol", "carol-demo-pass", "adjudicator"),
]
# How each demo annotator settles the readings' judgement calls (annotator.demo_readings): alice counts a
# call one step later as a repetition but wants the action right after a doubt; bob the other way round.
DEMO_HABITS = {"alice": Habits(repeat_gap=3, doubt_reach=1), "bob": Habits(repeat_gap=2, doubt_reach=3)}
# Shares of the traces labelled at the start: by both annotators, and by alice alone (waiting for bob).
LABELLED_SHARE = 0.6
AHEAD_SHARE = 0.05
# Disputes the adjudicator has decided; at least as many stay open.
DECIDED = 4


def do_seed_demo(*, n_traces: int = 40, work_dir: Path) -> str:
    """Create the demo (idempotent: a second run creates nothing and labels nothing) and return a summary."""
    project, summary = _seed_project(n_traces=n_traces, work_dir=work_dir)
    if _seed_labelled_start(project):
        # The submits' follow-ups run after commit, and with a worker only when it gets to them: the refresh
        # they schedule is done here, so the agreement report is stored before the server starts (and the
        # default signatures too, where the cache is shared with the server: Redis; else the page computes
        # them on first view).
        do_refresh_reports(project.pk)
        do_refresh_signatures(project.pk)
    return f"{summary}; {_progress(project)}"


@transaction.atomic
def _seed_project(*, n_traces: int, work_dir: Path) -> tuple[Project, str]:
    load_builtin_taxonomies()
    User = get_user_model()
    users = {}
    for username, password, _ in DEMO_USERS:
        user, created = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.org"}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.is_staff = username == "owner"
            user.save()
        users[username] = user
    project, created = Project.objects.get_or_create(
        slug=DEMO_PROJECT,
        defaults={
            "name": "Demo: why did the agents fail?",
            "description": "Generated multi-agent traces, labelled with MAST by two annotators.",
            "taxonomy_version": resolve_version("mast"),
            "guidelines": _GUIDELINES,
            "created_by": users["owner"],
        },
    )
    for username, _, role in DEMO_USERS:
        Membership.objects.get_or_create(project=project, user=users[username], role=role)
    if not Batch.objects.filter(name=DEMO_BATCH).exists():
        work_dir.mkdir(parents=True, exist_ok=True)
        path = work_dir / "demo-traces.jsonl"
        lines = native_lines(_unlabelled(synthetic_traces(n_traces, steps=24, seed=7)))
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        do_import_traces([(path, path.name)], batch_name=DEMO_BATCH, user=users["owner"], project=project)
    else:
        # Batch names are not unique (each project names its own): the demo's is the first of that name.
        project.batches.add(Batch.objects.filter(name=DEMO_BATCH).order_by("pk").first())
        do_assign(project)
    batch = project.batches.filter(name=DEMO_BATCH).order_by("pk").first()
    # One saved view (annotator.search.saved), so the trace list shows what a shared filter looks like.
    SavedView.objects.get_or_create(
        project=project,
        name="Disputed traces",
        defaults={
            "params": [list(pair) for pair in TraceFilter(state="in_adjudication").to_params()],
            "created_by": users["owner"],
        },
    )
    state = "created" if created else "already there"
    summary = f"Demo project '{project.slug}' {state}: {batch.trace_count} traces, {project.assignments.count()} assignments"
    return project, summary


@transaction.atomic
def _seed_labelled_start(project: Project) -> bool:
    """Label, check and adjudicate the start of the demo (see the module docstring); False, and nothing
    done, once the project has any annotation (a re-run, or people already at work). One transaction: a
    run that fails half-way leaves no half-labelled demo, and the next run starts it again."""
    if Annotation.objects.filter(assignment__project=project).exists():
        return False
    members = {m.user.username: m.user for m in project.memberships.select_related("user")}
    total = Trace.objects.in_project(project).count()
    both = int(total * LABELLED_SHARE)
    ahead = min(max(1, int(total * AHEAD_SHARE)), max(0, total - both - 1))
    labelled: set[int] = set()
    for name, count in (("alice", both + ahead), ("bob", both)):
        labelled |= _annotate(project, members[name], DEMO_HABITS[name], count)
    # The check the submits schedule runs after commit (or on a worker): the decisions need it now. It is
    # idempotent, so the scheduled one then finds nothing to change.
    adjudication.do_check_traces(project.pk, labelled)
    _adjudicate(project, members["carol"])
    return True


def _annotate(project: Project, user, habits: Habits, count: int) -> set[int]:
    """`user` takes the next `count` traces of their queue as the annotate page does: claim, a draft of the
    first finding (the page autosaves), then the submission. Returns the traces' ids."""
    done = set()
    for _ in range(count):
        assignment = do_claim_next(project, user)
        if assignment is None:
            break
        reading = read_trace(
            *_trace_input(assignment.trace_id),
            habits,
            reader=user.username,
            trace=assignment.trace.external_id,
        )
        draft = do_save_draft(assignment, _payload(reading, first_only=True), actor=user, base_version=0)
        do_submit_annotation(assignment, _payload(reading), actor=user, base_version=draft.version)
        done.add(assignment.trace_id)
    return done


def _trace_input(trace_id: int) -> tuple[list[DemoStep], str]:
    steps = Step.objects.filter(trace_id=trace_id).order_by("index")
    outcome = Trace.objects.filter(pk=trace_id).values_list("outcome", flat=True).get()
    fields = ("index", "kind", "agent", "content", "tool_name")
    return [DemoStep(*row) for row in steps.values_list(*fields)], outcome


def _payload(reading: Reading, *, first_only: bool = False) -> AnnotationPayload:
    found = reading.findings[:1] if first_only else reading.findings
    labels = tuple(
        LabelInput(mode=f.mode, evidence=tuple(Evidence(step=step) for step in f.steps), note=f.note)
        for f in found
    )
    if first_only:
        return AnnotationPayload(labels=labels, elapsed_seconds=reading.elapsed_seconds // 2)
    return AnnotationPayload(
        labels=labels,
        no_failure=reading.no_failure,
        confidence=reading.confidence,
        note=reading.note,
        elapsed_seconds=reading.elapsed_seconds - reading.elapsed_seconds // 2,
    )


def _adjudicate(project: Project, adjudicator) -> None:
    """The adjudicator decides the most severe disputes (the queue's own order), leaving as many open."""
    waiting = AdjudicationItem.objects.filter(project=project, status=AdjudicationItem.Status.OPEN).count()
    for _ in range(min(DECIDED, waiting // 2)):
        item = adjudication.do_claim_next(project, adjudicator)
        if item is None:
            break
        truth = frozenset(f.mode for f in findings(*_trace_input(item.trace_id), STRICT))
        answers = [frozenset(compared.labels) for compared in item_annotations(item)]
        choices = adjudicate(item.disputed, truth, answers)
        decision = Decision(
            modes=tuple(
                ModeDecision(c.mode, c.choice, reason_code=c.reason_code, note=c.note) for c in choices
            ),
        )
        do_decide(item, decision, actor=adjudicator, base_version=item.version)


def _progress(project: Project) -> str:
    submitted = Annotation.objects.filter(
        assignment__project=project,
        assignment__purpose=Assignment.Purpose.WORK,
        status=Annotation.Status.SUBMITTED,
    ).count()
    counts = adjudication.queue_counts(project)
    return (
        f"{submitted} annotations submitted, {counts['agreed']} traces agreed, "
        f"{counts['open']} disputes open, {counts['resolved']} decided"
    )


def _unlabelled(records):
    """The demo's annotators start from a clean slate: drop the generator's sample labels."""
    for record in records:
        record.annotations = []
        yield record


_GUIDELINES = """\
## How to label

1. Read the task, then walk the steps with **j** / **k**.
2. For every failure mode you see, toggle it (digits) and pin the step that shows it (**p**).
3. If the run has no failure, say so explicitly ("No failure observed").
4. Mark the trace *ambiguous* when two readings are equally plausible, and say why in the note.
"""
