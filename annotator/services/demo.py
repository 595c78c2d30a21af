"""The `make run` demo: generated traces (no external data needed) in a MAST project with four users."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotator.models import Membership, Project, SavedView
from annotator.search.filters import TraceFilter
from annotator.services.assignment import do_assign
from annotator.services.imports import do_import_traces
from taxonomy.services import load_builtin_taxonomies, resolve_version
from traces.importers.synthetic import native_lines, synthetic_traces
from traces.models import Batch

DEMO_PROJECT = "demo"
DEMO_BATCH = "demo-synthetic"
# Fixed, printed passwords: this is a local demo, never a deployment (docker-compose does not seed it).
DEMO_USERS = [
    ("owner", "owner-demo-pass", "owner"),
    ("alice", "alice-demo-pass", "annotator"),
    ("bob", "bob-demo-pass", "annotator"),
    ("carol", "carol-demo-pass", "adjudicator"),
]


@transaction.atomic
def do_seed_demo(*, n_traces: int = 40, work_dir: Path) -> str:
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
    return f"Demo project '{project.slug}' {state}: {batch.trace_count} traces, {project.assignments.count()} assignments"


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
