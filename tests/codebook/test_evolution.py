"""Moving a project to a new taxonomy version: labels of renamed and merged modes carry over with their
history, gold and discussions follow, splits and new modes ask annotators to look again, and a refused
mapping changes nothing."""

from __future__ import annotations

import pytest

from annotator.models import (
    AdjudicationItem,
    Annotation,
    Assignment,
    Comment,
    GoldHistory,
    GoldLabel,
    LabelApplication,
    LabelHistory,
    ModeProposal,
    ModeRecheck,
    Thread,
)
from annotator.services.evolution import (
    MigrationError,
    do_apply_migration,
    do_preview_migration,
    mapping_text,
    parse_changes_text,
    preview_rows,
)
from annotator.services.locking import is_locked
from tests.factories import api_token
from tests.labels import project_trace, submit

CHANGES = [
    {"op": "rename", "code": "FM-1.1", "new_code": "FM-1.1r", "name": "Disobey the task specification"},
    {
        "op": "merge",
        "codes": ["FM-1.3", "FM-1.4"],
        "into": {"code": "FM-1.3", "name": "Repetition or lost context"},
    },
    {
        "op": "split",
        "code": "FM-3.2",
        "into": [
            {"code": "FM-3.2a", "name": "No verification at all", "definition": "Nothing is checked."},
            {
                "code": "FM-3.2b",
                "name": "Verification of the wrong thing",
                "definition": "The wrong thing is checked.",
            },
        ],
    },
    {"op": "retire", "code": "FM-2.1"},
]


def labels_of(annotation: Annotation) -> dict[str, list[int]]:
    return {
        label.mode.code: label.evidence_steps
        for label in LabelApplication.objects.filter(annotation=annotation).select_related("mode")
    }


@pytest.fixture
def labelled(project, annotator_a, annotator_b):
    trace = project_trace(project, n_steps=10)
    a = submit(
        project,
        trace,
        annotator_a,
        {"FM-1.1": [1], "FM-1.3": [2], "FM-1.4": [2, 3], "FM-2.1": [4], "FM-3.2": [5]},
    )
    b = submit(project, trace, annotator_b, {"FM-1.1": [1], "FM-2.2": [6]})
    return trace, a, b


def test_preview_changes_nothing_and_says_where_each_mode_goes(project, owner, labelled):
    before = project.taxonomy_version
    migration = do_preview_migration(project, CHANGES, actor=owner)
    project.refresh_from_db()
    assert project.taxonomy_version == before and migration.to_version.number == before.number + 1
    rows = {row["code"]: row for row in preview_rows(migration)["old"]}
    assert (rows["FM-1.1"]["kind"], rows["FM-1.1"]["targets"], rows["FM-1.1"]["labels"]) == (
        "renamed",
        ["FM-1.1r"],
        2,
    )
    assert (
        rows["FM-1.4"]["kind"] == "merged"
        and rows["FM-3.2"]["kind"] == "split"
        and rows["FM-2.1"]["kind"] == "retired"
    )
    assert mapping_text(migration.mapping)["FM-2.1"] == "retire"
    assert LabelApplication.objects.filter(mode__version=before).count() == 7


def test_apply_moves_labels_with_history_combines_merges_and_queues_rechecks(
    project, owner, labelled, annotator_a
):
    _trace, a, b = labelled
    migration = do_preview_migration(project, CHANGES, actor=owner)
    migration = do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    project.refresh_from_db()
    assert project.taxonomy_version == migration.to_version
    # Renamed and merged modes carry over (merged evidence combined); split and retired ones leave.
    assert labels_of(a) == {"FM-1.1r": [1], "FM-1.3": [2, 3]}
    assert labels_of(b) == {"FM-1.1r": [1], "FM-2.2": [6]}
    assert not LabelApplication.objects.exclude(mode__version=migration.to_version).exists()
    assert Annotation.objects.get(pk=a.pk).version == a.version + 1  # an open tab's save is now stale
    entry = LabelHistory.objects.filter(annotation=a, action="taxonomy").get()
    text = entry.after["migration"]
    assert text.startswith(f"taxonomy v{migration.from_version.number} -> v{migration.to_version.number}: ")
    assert (
        "FM-1.1 became FM-1.1r" in text and "FM-1.4 merged into FM-1.3" in text and "FM-2.1 retired" in text
    )
    assert {label["mode"] for label in entry.before["labels"]} >= {"FM-2.1", "FM-3.2"}  # kept in history
    # The split asks annotator A (who had FM-3.2) to look at both parts, and nobody else.
    assert sorted(
        ModeRecheck.objects.values_list("annotation__assignment__annotator__username", "mode__code")
    ) == [
        (annotator_a.username, "FM-3.2a"),
        (annotator_a.username, "FM-3.2b"),
    ]
    assert migration.summary["annotations"] == 2 and migration.summary["rechecks"] == 2


def test_a_recheck_unlocks_the_annotation_and_is_resolved_by_submitting_again(
    client, project, owner, labelled, annotator_a
):
    trace, a, _b = labelled
    AdjudicationItem.objects.create(
        project=project, trace=trace, status="open", disputed=["FM-3.2", "FM-1.4"]
    )
    assignment = a.assignment
    assert is_locked(assignment)
    migration = do_preview_migration(project, CHANGES, actor=owner)
    do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    assert AdjudicationItem.objects.get().disputed == ["FM-1.3", "FM-3.2a", "FM-3.2b"]
    assert not is_locked(Assignment.objects.get(pk=assignment.pk))
    project.refresh_from_db()
    # Through the API: its answer says at once that the annotation is frozen again (the round is closed).
    answer = client.post(
        f"/api/projects/{project.slug}/assignments/{assignment.pk}/submit/",
        {
            "version": Annotation.objects.get(pk=a.pk).version,
            "labels": [
                {"mode": "FM-1.1r", "evidence": [{"step": 1}]},
                {"mode": "FM-3.2b", "evidence": [{"step": 5}]},
            ],
        },
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {api_token(annotator_a)}",
    )
    assert answer.status_code == 200 and answer.json()["editable"] is False
    assert not ModeRecheck.objects.filter(resolved_at__isnull=True).exists()
    assert is_locked(Assignment.objects.get(pk=assignment.pk))


def test_gold_labels_and_threads_follow_the_mapping(project, owner, labelled, adjudicator):
    trace, _a, _b = labelled
    old = {m.code: m for m in project.taxonomy_version.modes.all()}
    item = AdjudicationItem.objects.create(project=project, trace=trace, status="resolved")
    GoldLabel.objects.create(item=item, mode=old["FM-1.3"], evidence=[{"step": 2}], source="adjudicator")
    GoldLabel.objects.create(item=item, mode=old["FM-1.4"], evidence=[{"step": 3}], source="adjudicator")
    GoldLabel.objects.create(item=item, mode=old["FM-2.1"], source="adjudicator")
    GoldLabel.objects.create(item=item, mode=old["FM-2.2"], source="agreed")
    first = Thread.objects.create(project=project, trace=trace, mode=old["FM-1.3"])
    second = Thread.objects.create(
        project=project, trace=trace, mode=old["FM-1.4"], decision="guideline", decision_text="x"
    )
    Comment.objects.create(thread=first, author=owner, body="one")
    Comment.objects.create(thread=second, author=adjudicator, body="two")
    renamed = Thread.objects.create(project=project, trace=trace, mode=old["FM-1.1"])
    migration = do_preview_migration(project, CHANGES, actor=owner)
    do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    gold = {g.mode.code: g.evidence for g in GoldLabel.objects.select_related("mode")}
    assert gold == {"FM-1.3": [{"step": 2}, {"step": 3}], "FM-2.2": []}
    history = GoldHistory.objects.get(action="migrated")
    assert "FM-2.1 retired" in history.note and len(history.before) == 4
    merged = Thread.objects.get(trace=trace, mode__code="FM-1.3")
    assert sorted(merged.comments.values_list("body", flat=True)) == ["one", "two"]
    assert merged.decision == "guideline" and merged.mode.version == migration.to_version
    assert Thread.objects.get(pk=renamed.pk).mode.code == "FM-1.1r"


def test_a_new_mode_from_proposals_rechecks_their_traces_and_accepts_them(
    project, owner, labelled, annotator_a, annotator_b
):
    trace, a, b = labelled
    other = project_trace(project)
    submit(project, other, annotator_a, {"FM-1.1": [0]})
    proposal = ModeProposal.objects.create(project=project, trace=trace, author=annotator_b, text="tool loop")
    change = {
        "op": "add",
        "code": "FM-2.7",
        "name": "Tool loop",
        "definition": "Same call again.",
        "category": "FC2",
        "proposals": [proposal.pk],
    }
    migration = do_preview_migration(project, [change], actor=owner)
    do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    assert set(ModeRecheck.objects.values_list("annotation_id", "mode__code", "reason")) == {
        (a.pk, "FM-2.7", "new mode FM-2.7"),
        (b.pk, "FM-2.7", "new mode FM-2.7"),
    }
    proposal.refresh_from_db()
    assert (proposal.status, proposal.outcome, proposal.mode.code) == ("accepted", "FM-2.7", "FM-2.7")
    # Nothing but the mode rows changed: no history for annotations whose labels kept their codes.
    assert not LabelHistory.objects.filter(action="taxonomy").exists()
    assert labels_of(a)["FM-1.1"] == [1]


def test_a_mapping_that_leaves_a_mode_unmapped_is_refused_and_changes_nothing(project, owner, labelled):
    _trace, a, _b = labelled
    migration = do_preview_migration(project, CHANGES, actor=owner)
    mapping = dict(mapping_text(migration.mapping))
    mapping["FM-2.1"] = []
    with pytest.raises(MigrationError, match=r"FM-2\.1 is not mapped: map it to a new mode or say 'retire'"):
        do_apply_migration(migration, mapping, actor=owner)
    del mapping["FM-2.1"]
    with pytest.raises(MigrationError, match=r"FM-2\.1 is not mapped"):
        do_apply_migration(migration, mapping, actor=owner)
    project.refresh_from_db()
    assert project.taxonomy_version == migration.from_version
    assert labels_of(a)["FM-2.1"] == [4] and not ModeRecheck.objects.exists()
    assert not LabelHistory.objects.filter(action="taxonomy").exists()
    migration.refresh_from_db()
    assert migration.status == "previewed"
    # The owner may map a retired mode's labels elsewhere instead: the confirmed mapping decides.
    mapping["FM-2.1"] = "FM-2.2"
    do_apply_migration(migration, mapping, actor=owner)
    assert labels_of(a)["FM-2.2"] == [4]


def test_previews_name_the_wrong_change_and_a_stale_preview_is_refused(project, owner, labelled):
    with pytest.raises(MigrationError, match=r"change 2 \(retire\): 'FM-9' is not a mode"):
        do_preview_migration(project, [{"op": "retire", "code": "FM-2.1"}, {"op": "retire", "code": "FM-9"}])
    with pytest.raises(MigrationError, match="No proposal 999"):
        do_preview_migration(
            project,
            [
                {
                    "op": "add",
                    "code": "X",
                    "name": "X",
                    "definition": "x",
                    "category": "FC1",
                    "proposals": [999],
                }
            ],
        )
    first = do_preview_migration(project, [{"op": "retire", "code": "FM-2.1"}])
    second = do_preview_migration(
        project, [{"op": "retire", "code": "FM-2.2"}]
    )  # rewrites the unused version
    with pytest.raises(MigrationError, match="changed since this preview"):
        do_apply_migration(first, mapping_text(first.mapping))
    do_apply_migration(second, mapping_text(second.mapping))
    with pytest.raises(MigrationError, match="applied"):
        do_apply_migration(second, mapping_text(second.mapping))


def test_changes_are_read_from_yaml_with_a_clear_error():
    assert parse_changes_text("- op: retire\n  code: A\n") == [{"op": "retire", "code": "A"}]
    assert parse_changes_text("changes:\n  - {op: retire, code: A}\n") == [{"op": "retire", "code": "A"}]
    with pytest.raises(MigrationError, match="not valid YAML at line"):
        parse_changes_text("- op: [\n")
    with pytest.raises(MigrationError, match="as a list"):
        parse_changes_text("op: retire")


def test_the_round_trend_follows_a_renamed_mode_across_versions(project, owner, annotator_a, annotator_b):
    from annotator.services.rounds import TraceChoice, do_close_round, do_open_round, round_trend

    names = [annotator_a.username, annotator_b.username]
    traces = [project_trace(project, metadata={"round": "R1" if i < 2 else "R2"}) for i in range(4)]
    one = do_open_round(project, name="Round 1", annotators=names, choice=TraceChoice(where=("round=R1",)))
    for trace in traces[:2]:
        for user in (annotator_a, annotator_b):
            submit(
                project,
                trace,
                user,
                {"FM-1.1": [1], "FM-1.3": [2]} if user == annotator_a else {"FM-1.1": [1]},
            )
    do_close_round(one)
    migration = do_preview_migration(
        project,
        [
            {"op": "rename", "code": "FM-1.1", "new_code": "FM-1.1r", "name": "Task disobeyed"},
            {"op": "merge", "codes": ["FM-1.3", "FM-1.4"], "into": {"code": "FM-1.34", "name": "Loops"}},
        ],
    )
    do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    project.refresh_from_db()
    two = do_open_round(project, name="Round 2", annotators=names, choice=TraceChoice(where=("round=R2",)))
    for trace in traces[2:]:
        for user in (annotator_a, annotator_b):
            submit(project, trace, user, {"FM-1.1r": [1]})
    do_close_round(two)
    rows = {code: (name, rows) for code, name, rows in round_trend(project).modes}
    name, both = rows["FM-1.1r"]
    assert name == "Task disobeyed" and all(row is not None for row in both)
    assert "FM-1.1" not in rows
    # A merged mode measured something else before: its old row stays apart, marked with its version.
    assert rows["FM-1.3 (v1)"][1][1] is None and rows["FM-1.34"][1][0] is None


def test_merging_two_disputed_modes_turns_the_disagreement_into_agreement(
    project, owner, annotator_a, annotator_b, django_capture_on_commit_callbacks
):
    trace = project_trace(project)
    with django_capture_on_commit_callbacks(execute=True):
        submit(project, trace, annotator_a, {"FM-1.3": [1]})
        submit(project, trace, annotator_b, {"FM-1.4": [1]})
    item = AdjudicationItem.objects.get(trace=trace)
    assert item.status == "open" and item.disputed == ["FM-1.3", "FM-1.4"]
    migration = do_preview_migration(project, [{"op": "merge", "codes": ["FM-1.3", "FM-1.4"]}])
    with django_capture_on_commit_callbacks(execute=True):
        do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    item.refresh_from_db()
    assert item.status == "agreed" and item.disputed == []
    assert list(GoldLabel.objects.filter(item=item).values_list("mode__code", flat=True)) == ["FM-1.3"]


def test_a_save_from_a_page_opened_before_the_move_is_refused_with_a_reason(project, owner, annotator_a):
    from annotator.services.annotations import AnnotationInvalid, do_save_draft
    from annotator.services.payload import AnnotationPayload

    trace = project_trace(project)
    assignment = Assignment.objects.create(project=project, trace=trace, annotator=annotator_a)
    stale = Assignment.objects.select_related("project__taxonomy_version").get(pk=assignment.pk)
    migration = do_preview_migration(project, [{"op": "retire", "code": "FM-2.1"}])
    do_apply_migration(migration, mapping_text(migration.mapping), actor=owner)
    with pytest.raises(AnnotationInvalid, match="moved to a new taxonomy version"):
        do_save_draft(stale, AnnotationPayload(note="x"), actor=annotator_a, base_version=0)
