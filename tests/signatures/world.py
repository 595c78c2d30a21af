"""Synthetic projects whose true failure signatures are known by construction (see the tables below).

Modes (MAST): R = FM-1.3 step repetition (FC1), T = FM-1.5 unaware of termination (FC1), V = FM-3.3
incorrect verification (FC3). Every trace has 10 steps; step i's agent is "planner" when i is odd, else
"coder". Evidence: R at step 2 (block 1: steps 2 and 3), T at step 5, V at step 9.

    block  n   outcome  model    batch   system   benchmark  modes
    1      6   failure  gpt-4o   before  AG2      swe        R V   (R evidence at steps 2 and 3)
    2      4   failure  gpt-4o   before  AG2      gaia       V
    3      4   failure  gpt-4o   before  AG2      gaia       T V
    4      2   failure  gpt-4o   before  AG2      gaia       R
    5      4   failure  gpt-4o   before  AG2      gaia       -     (items resolved, no gold label)
    6      2   failure  claude   after   AG2      gaia       R T V
    7      4   failure  claude   after   AG2      gaia       V
    8      2   failure  claude   after   AG2      gaia       T     (first one: extra evidence, step 10
                                                                   out of range, plus two junk entries)
    9      12  failure  claude   after   AG2      gaia       -
    10     4   success  gpt-4o   before  MetaGPT  gaia       R
    11     2   success  gpt-4o   before  MetaGPT  gaia       V
    12     14  success  gpt-4o   before  MetaGPT  gaia       -
    13     4   success  claude   after   MetaGPT  swe        R
    14     2   success  claude   after   MetaGPT  gaia       V
    15     14  success  claude   after   MetaGPT  gaia       -

Plus three traces the gold source must ignore: two with an *open* adjudication item and one with none.
"""

from __future__ import annotations

from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel, LabelApplication, Project
from taxonomy.models import FailureMode
from tests.factories import BatchFactory, trace_with_steps

R, T, V = "FM-1.3", "FM-1.5", "FM-3.3"
EVIDENCE = {R: [2], T: [5], V: [9]}

BLOCKS = [
    (6, "failure", "gpt-4o", "before", "AG2", "swe", (R, V)),
    (4, "failure", "gpt-4o", "before", "AG2", "gaia", (V,)),
    (4, "failure", "gpt-4o", "before", "AG2", "gaia", (T, V)),
    (2, "failure", "gpt-4o", "before", "AG2", "gaia", (R,)),
    (4, "failure", "gpt-4o", "before", "AG2", "gaia", ()),
    (2, "failure", "claude", "after", "AG2", "gaia", (R, T, V)),
    (4, "failure", "claude", "after", "AG2", "gaia", (V,)),
    (2, "failure", "claude", "after", "AG2", "gaia", (T,)),
    (12, "failure", "claude", "after", "AG2", "gaia", ()),
    (4, "success", "gpt-4o", "before", "MetaGPT", "gaia", (R,)),
    (2, "success", "gpt-4o", "before", "MetaGPT", "gaia", (V,)),
    (14, "success", "gpt-4o", "before", "MetaGPT", "gaia", ()),
    (4, "success", "claude", "after", "MetaGPT", "swe", (R,)),
    (2, "success", "claude", "after", "MetaGPT", "gaia", (V,)),
    (14, "success", "claude", "after", "MetaGPT", "gaia", ()),
]


def build_gold_world(project: Project) -> dict:
    """Fill `project` (on MAST) with the 80 gold traces above and three non-gold ones."""
    modes = {m.code: m for m in FailureMode.objects.filter(version=project.taxonomy_version)}
    batches = {name: BatchFactory(name=name) for name in ("before", "after")}
    project.batches.add(*batches.values())
    gold: list[GoldLabel] = []
    for number, (count, outcome, model, batch, system, benchmark, codes) in enumerate(BLOCKS, 1):
        for i in range(count):
            trace = trace_with_steps(
                10, batch=batches[batch], outcome=outcome, model=model, system=system, benchmark=benchmark
            )
            status = AdjudicationItem.Status.RESOLVED if number == 5 else AdjudicationItem.Status.AGREED
            item = AdjudicationItem.objects.create(project=project, trace=trace, status=status)
            for code in codes:
                steps = [2, 3] if (number == 1 and code == R) else EVIDENCE[code]
                evidence = [{"step": s} for s in steps]
                if number == 8 and i == 0:
                    evidence += [{"step": 10}, {"quote": "no step"}, {"step": "abc"}]
                gold.append(GoldLabel(item=item, mode=modes[code], evidence=evidence, source="agreed"))
    for status in (AdjudicationItem.Status.OPEN, AdjudicationItem.Status.OPEN, None):
        trace = trace_with_steps(10, batch=batches["before"], outcome="failure", model="gpt-4o")
        if status:
            item = AdjudicationItem.objects.create(project=project, trace=trace, status=status)
            gold.append(GoldLabel(item=item, mode=modes[R], evidence=[{"step": 1}], source="agreed"))
    GoldLabel.objects.bulk_create(gold)
    return {"batches": batches, "modes": modes}


def build_annotation_world(project: Project, annotator_a, annotator_b) -> dict:
    """Four traces labelled by two annotators (plus drafts that must never count):

    trace  outcome  annotator A          annotator B             union  agreed  gold
    t1     failure  R@1, V@3             V@3,4                   R V    V       V@3 (resolved)
    t2     failure  T@2                  T@2                     T      T       (item open)
    t3     success  no failure           R@0                     R      -
    t4     success  R (no evidence)      draft: V                R      (one submission only)
    t5     failure  -                    draft: T                (nothing submitted)
    """
    modes = {m.code: m for m in FailureMode.objects.filter(version=project.taxonomy_version)}
    batch = BatchFactory(name="labelled")
    project.batches.add(batch)
    outcomes = ["failure", "failure", "success", "success", "failure"]
    traces = [trace_with_steps(5, batch=batch, outcome=o, model="gpt-4o") for o in outcomes]
    plan = {
        (0, annotator_a): ("submitted", {R: [1], V: [3]}),
        (0, annotator_b): ("submitted", {V: [3, 4]}),
        (1, annotator_a): ("submitted", {T: [2]}),
        (1, annotator_b): ("submitted", {T: [2]}),
        (2, annotator_a): ("submitted", {}),
        (2, annotator_b): ("submitted", {R: [0]}),
        (3, annotator_a): ("submitted", {R: []}),
        (3, annotator_b): ("draft", {V: [1]}),
        (4, annotator_b): ("draft", {T: [1]}),
    }
    for (index, user), (status, labels) in plan.items():
        assignment = Assignment.objects.create(
            project=project,
            trace=traces[index],
            annotator=user,
            status="submitted" if status == "submitted" else "in_progress",
        )
        annotation = Annotation.objects.create(assignment=assignment, status=status, no_failure=not labels)
        for code, steps in labels.items():
            LabelApplication.objects.create(
                annotation=annotation, mode=modes[code], evidence=[{"step": s} for s in steps]
            )
    item = AdjudicationItem.objects.create(project=project, trace=traces[0], status="resolved")
    GoldLabel.objects.create(item=item, mode=modes[V], evidence=[{"step": 3}], source="adjudicator")
    AdjudicationItem.objects.create(project=project, trace=traces[1], status="open")
    return {"traces": traces}
