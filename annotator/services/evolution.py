"""Codebook evolution: derive a project's next taxonomy version from changes, preview where every mode goes,
and move the project there with a mapping the owner confirmed.

Preview (`do_preview_migration`) stores the new version (taxonomy.services.do_load_taxonomy: a new version
when the current one is in use) and a TaxonomyMigration holding the implied mapping; it changes no label.
Apply (`do_apply_migration`) takes the mapping the owner confirmed (every old mode mapped, or explicitly
retired), and in one transaction:

- labels of kept, renamed and merged modes move to the new version's mode; two labels merged on one
  annotation become one, their evidence combined; every annotation whose labels changed gets a LabelHistory
  row (action ``taxonomy``) whose ``after`` says what happened ("taxonomy v1 -> v2: FM-x became FM-y");
- labels of split and retired modes leave the active annotation (the history keeps them); a split queues a
  ModeRecheck per part on each annotation that had the old mode, a new mode one per annotation of the
  traces it was proposed on, shown in the annotator's queue and resolved by submitting the annotation again;
- gold labels (with a GoldHistory row), discussion threads and the adjudication items' disputed codes follow
  the same mapping; proposals the new modes were made from are accepted and point at their mode;
- the project moves to the new version. Anything refused changes nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import yaml
from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from annotator.models import (
    AdjudicationItem,
    Annotation,
    Assignment,
    Comment,
    GoldHistory,
    GoldLabel,
    LabelApplication,
    LabelHistory,
    Membership,
    ModeProposal,
    ModeRecheck,
    Project,
    TaxonomyMigration,
    Thread,
)
from annotator.raters import receives_work_q
from annotator.services.annotations import snapshot
from annotator.services.comparison import gold_snapshot
from annotator.services.followups import after_annotations_changed
from taxonomy.evolution import ChangeError, apply_changes, check_mapping, mapping_kinds, recheck_modes
from taxonomy.models import FailureMode, TaxonomyVersion
from taxonomy.services import do_load_taxonomy, version_to_spec

MAX_CHANGES_TEXT = 200_000


class MigrationError(ValueError):
    """Why a preview or an apply was refused, in words for the owner; nothing changed."""


def parse_changes_text(text: str) -> list[Any]:
    """Changes as typed on the page or given to the CLI: a YAML (or JSON) list, or ``{changes: [...]}``."""
    if len(text or "") > MAX_CHANGES_TEXT:
        raise MigrationError(f"The changes are too long (at most {MAX_CHANGES_TEXT:,} characters)")
    try:
        data = yaml.safe_load(text or "")
    except (yaml.YAMLError, RecursionError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise MigrationError(f"The changes are not valid YAML{where}") from None
    if isinstance(data, dict) and set(data) == {"changes"}:
        data = data["changes"]
    if not isinstance(data, list):
        raise MigrationError("Write the changes as a list, one '- op: ...' item per change")
    return data


def do_preview_migration(
    project: Project, changes: Sequence[Any], *, actor=None, label: str = ""
) -> TaxonomyMigration:
    """Derive the next version from the project's current one and store the preview. Raises
    MigrationError (naming the change that is wrong); the project and its labels do not change."""
    current = project.taxonomy_version
    try:
        evolution = apply_changes(version_to_spec(current), changes)
    except ChangeError as error:
        raise MigrationError(str(error)) from None
    spec = evolution.spec
    if label:
        if len(label) > 40:
            raise MigrationError("A version label may be at most 40 characters")
        spec = replace(spec, version=label.strip())
    proposals = {code: list(ids) for code, ids in evolution.proposals.items() if ids}
    for code in evolution.added:
        if code not in proposals:
            # Proposals an owner already settled as "turned into <code>" are linked without being listed.
            settled = ModeProposal.objects.filter(
                project=project, status=ModeProposal.Status.ACCEPTED, outcome=code, mode__isnull=True
            )
            proposals[code] = list(settled.values_list("pk", flat=True)) or []
    proposals = {code: ids for code, ids in proposals.items() if ids}
    wanted = {pid for ids in proposals.values() for pid in ids}
    found = set(ModeProposal.objects.filter(project=project, pk__in=wanted).values_list("pk", flat=True))
    if wanted - found:
        missing = ", ".join(str(pid) for pid in sorted(wanted - found))
        raise MigrationError(f"No proposal {missing} in this project")
    with transaction.atomic():
        version, _ = do_load_taxonomy(spec, slug=current.taxonomy.slug)
        if version.pk == current.pk:
            raise MigrationError("These changes leave the taxonomy as it is: nothing to migrate")
        return TaxonomyMigration.objects.create(
            project=project,
            from_version=current,
            to_version=version,
            to_hash=version.content_hash,
            changes=json.loads(json.dumps(list(changes), default=str)),
            mapping={old: list(new) for old, new in evolution.mapping.items()},
            proposals=proposals,
            created_by=actor,
        )


def preview_rows(migration: TaxonomyMigration) -> dict[str, Any]:
    """What the preview page, the API and the CLI show: each old mode with what happens to it and how many
    labels it holds in the project, then the new modes."""
    mapping = migration.applied_mapping or migration.mapping
    new_modes = list(migration.to_version.modes.order_by("order").values_list("code", "name"))
    kinds = mapping_kinds(mapping, [code for code, _ in new_modes])
    counts = dict(
        LabelApplication.objects.filter(
            annotation__assignment__project=migration.project, mode__version=migration.from_version
        )
        .values_list("mode__code")
        .annotate(n=Count("id"))
    )
    old = [
        {
            "code": code,
            "name": name,
            "kind": kinds[code],
            "targets": list(mapping.get(code, [])),
            "labels": counts.get(code, 0),
        }
        for code, name in migration.from_version.modes.order_by("order").values_list("code", "name")
    ]
    new = [
        {"code": code, "name": name, "proposals": migration.proposals.get(code, [])}
        for code, name in new_modes
        if kinds.get(code) == "new"
    ]
    return {"old": old, "new": new}


def mapping_text(mapping: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The mapping as the confirm form shows it: "FM-1, FM-2" or "retire"."""
    return {old: ", ".join(new) if new else "retire" for old, new in mapping.items()}


def do_apply_migration(
    migration: TaxonomyMigration, raw_mapping: Mapping[str, Any], *, actor=None
) -> TaxonomyMigration:
    """Move the project to the previewed version with the confirmed mapping (see the module docstring).
    Raises MigrationError when the preview is stale or the mapping incomplete; nothing changes then."""
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=migration.project_id)
        # Saves lock their assignment and then check the project's version (annotations._write): holding
        # every assignment makes a save wait for this move, then refuse its stale modes.
        list(Assignment.objects.select_for_update().filter(project=project).values_list("pk", flat=True))
        migration = TaxonomyMigration.objects.select_for_update().get(pk=migration.pk)
        if migration.status != TaxonomyMigration.Status.PREVIEWED:
            raise MigrationError(f"This migration is {migration.get_status_display().lower()}; preview again")
        if project.taxonomy_version_id != migration.from_version_id:
            raise MigrationError(
                "The project moved to another taxonomy version since this preview; preview again"
            )
        to_version = TaxonomyVersion.objects.get(pk=migration.to_version_id)
        if to_version.content_hash != migration.to_hash:
            raise MigrationError("The new version was changed since this preview; preview again")
        old_modes = {m.code: m for m in FailureMode.objects.filter(version_id=migration.from_version_id)}
        new_modes = {m.code: m for m in FailureMode.objects.filter(version=to_version)}
        try:
            mapping = check_mapping(raw_mapping, list(old_modes), list(new_modes))
        except ValueError as error:
            raise MigrationError(str(error)) from None
        move = _Move(project, migration, mapping, old_modes, new_modes, actor)
        summary = move.run()
        project.taxonomy_version = to_version
        project.save(update_fields=["taxonomy_version"])
        now = timezone.now()
        migration.status, migration.applied_at, migration.applied_by = (
            TaxonomyMigration.Status.APPLIED,
            now,
            actor,
        )
        migration.applied_mapping = {old: list(new) for old, new in mapping.items()}
        migration.summary = summary
        migration.save()
        TaxonomyMigration.objects.filter(project=project, status=TaxonomyMigration.Status.PREVIEWED).update(
            status=TaxonomyMigration.Status.DISCARDED
        )
        traces = move.changed_traces
        transaction.on_commit(lambda: after_annotations_changed(project.pk, traces))
    return migration


class _Move:
    """One apply: the mapping turned into label, gold, thread and re-check changes."""

    def __init__(self, project, migration, mapping, old_modes, new_modes, actor) -> None:
        self.project, self.migration, self.mapping, self.actor = project, migration, mapping, actor
        self.old_modes, self.new_modes = old_modes, new_modes
        self.old_by_id = {m.pk: m.code for m in old_modes.values()}
        self.kinds = mapping_kinds(mapping, list(new_modes))
        self.prefix = f"taxonomy v{migration.from_version.number} -> v{migration.to_version.number}"
        self.changed_traces: set[int] = set()

    def run(self) -> dict[str, int]:
        summary = {"annotations": self._labels(), "gold_items": self._gold(), "threads": self._threads()}
        summary["rechecks"] = self._rechecks()
        summary["proposals"] = self._proposals()
        self._disputed()
        return summary

    def _describe(self, codes: Iterable[str]) -> str:
        words = []
        for code in sorted(set(codes)):
            kind, targets = self.kinds[code], self.mapping[code]
            if kind == "retired":
                words.append(f"{code} retired")
            elif kind == "split":
                words.append(f"{code} was split into {', '.join(targets)} (re-check)")
            elif kind == "merged":
                words.append(f"{code} merged into {targets[0]}")
            else:
                words.append(f"{code} became {targets[0]}")
        return f"{self.prefix}: " + "; ".join(words)

    def _combine(self, rows: list[dict]) -> dict[str, dict]:
        """Old label rows -> new ones by new code; labels landing on the same mode are combined."""
        out: dict[str, dict] = {}
        for row in rows:
            targets = self.mapping[self.old_by_id[row["mode_id"]]]
            if len(targets) != 1:
                continue  # split or retired: leaves the active annotation (the history keeps it)
            into = out.setdefault(
                targets[0], {"primary": False, "evidence": [], "note": [], "attribution": {}}
            )
            into["primary"] = into["primary"] or row["primary"]
            for item in row["evidence"] or []:
                if item not in into["evidence"]:
                    into["evidence"].append(item)
            if row["note"] and row["note"] not in into["note"]:
                into["note"].append(row["note"])
            into["attribution"] = into["attribution"] or row.get("attribution") or {}
        return out

    def _labels(self) -> int:
        labels = LabelApplication.objects.filter(annotation__assignment__project=self.project)
        by_annotation: dict[int, list[dict]] = defaultdict(list)
        for row in labels.values(
            "id", "annotation_id", "mode_id", "primary", "evidence", "note", "attribution"
        ):
            by_annotation[row["annotation_id"]].append(row)
        # Kept modes (same code, nothing merged in) only change rows: one UPDATE per mode, no history.
        kept = [c for c, kind in self.kinds.items() if kind == "kept" and c in self.old_modes]
        touched = {
            aid
            for aid, rows in by_annotation.items()
            if any(
                self.kinds[self.old_by_id[r["mode_id"]]] != "kept"
                for r in rows
                if r["mode_id"] in self.old_by_id
            )
        }
        annotations = Annotation.objects.filter(pk__in=touched).select_related("assignment")
        befores = {a.pk: (a, snapshot(a, a.assignment)) for a in annotations}
        for code in kept:
            labels.filter(mode=self.old_modes[code]).update(mode=self.new_modes[code])
        for aid, (annotation, before) in befores.items():
            rows = [r for r in by_annotation[aid] if r["mode_id"] in self.old_by_id]
            moved = [r for r in rows if self.kinds[self.old_by_id[r["mode_id"]]] != "kept"]
            combined = self._combine(moved)
            LabelApplication.objects.filter(pk__in=[r["id"] for r in moved]).delete()
            LabelApplication.objects.bulk_create(
                LabelApplication(
                    annotation_id=aid,
                    mode=self.new_modes[code],
                    primary=fields["primary"],
                    evidence=fields["evidence"],
                    note="\n".join(fields["note"]),
                    attribution=fields["attribution"],
                )
                for code, fields in combined.items()
            )
            # A new version number: a tab still open on the old labels is stale (its save is refused, not
            # merged), and the adjudication check sees changed inputs and compares the migrated labels.
            Annotation.objects.filter(pk=aid).update(version=F("version") + 1)
            after = snapshot(annotation, annotation.assignment)
            after["migration"] = self._describe(self.old_by_id[r["mode_id"]] for r in moved)
            LabelHistory.objects.create(
                annotation=annotation, actor=self.actor, action="taxonomy", before=before, after=after
            )
            self.changed_traces.add(annotation.assignment.trace_id)
        self.split_annotations = {
            aid: {
                self.old_by_id[r["mode_id"]]
                for r in rows
                if self.kinds.get(self.old_by_id.get(r["mode_id"])) == "split"
            }
            for aid, rows in by_annotation.items()
        }
        return len(befores)

    def _gold(self) -> int:
        gold = GoldLabel.objects.filter(item__project=self.project)
        by_item: dict[int, list[dict]] = defaultdict(list)
        for row in gold.values(
            "id",
            "item_id",
            "mode_id",
            "primary",
            "evidence",
            "note",
            "source",
            "reason_code",
            "decided_by_id",
        ):
            if row["mode_id"] in self.old_by_id:
                by_item[row["item_id"]].append(row)
        for code, kind in self.kinds.items():
            if kind == "kept" and code in self.old_modes:
                gold.filter(mode=self.old_modes[code]).update(mode=self.new_modes[code])
        items = {i.pk: i for i in AdjudicationItem.objects.filter(pk__in=list(by_item))}
        changed = 0
        for item_id, rows in by_item.items():
            rows = [r for r in rows if self.kinds[self.old_by_id[r["mode_id"]]] != "kept"]
            if not rows:
                continue
            codes = [self.old_by_id[r["mode_id"]] for r in rows]
            before = gold_snapshot(item_id)
            combined = self._combine(rows)
            first = {
                self.mapping[self.old_by_id[r["mode_id"]]][0]: r
                for r in reversed(rows)
                if len(self.mapping[self.old_by_id[r["mode_id"]]]) == 1
            }
            GoldLabel.objects.filter(pk__in=[r["id"] for r in rows]).delete()
            GoldLabel.objects.bulk_create(
                GoldLabel(
                    item_id=item_id,
                    mode=self.new_modes[code],
                    primary=fields["primary"],
                    evidence=fields["evidence"],
                    note="\n".join(fields["note"]),
                    source=first[code]["source"],
                    reason_code=first[code]["reason_code"],
                    decided_by_id=first[code]["decided_by_id"],
                )
                for code, fields in combined.items()
            )
            item = items[item_id]
            GoldHistory.objects.create(
                project=self.project,
                trace_id=item.trace_id,
                item=item,
                actor=self.actor,
                action=GoldHistory.Action.MIGRATED,
                before=before,
                after={"gold": gold_snapshot(item_id)},
                note=self._describe(c for c in codes if self.kinds[c] != "kept"),
            )
            self.changed_traces.add(item.trace_id)
            changed += 1
        return changed

    def _threads(self) -> int:
        """Threads on a mode that maps to one new mode follow it; two threads landing on the same trace and
        mode become one (comments moved, the first decision kept). Threads on split or retired modes stay on
        the old mode: they are the record of why it changed."""
        moved = 0
        threads = Thread.objects.filter(project=self.project, mode_id__in=list(self.old_by_id)).order_by("id")
        for thread in threads:
            targets = self.mapping[self.old_by_id[thread.mode_id]]
            if len(targets) != 1:
                continue
            new = self.new_modes[targets[0]]
            existing = Thread.objects.filter(project=self.project, trace_id=thread.trace_id, mode=new).first()
            if existing is None:
                Thread.objects.filter(pk=thread.pk).update(mode=new)
            else:
                Comment.objects.filter(thread=thread).update(thread=existing)
                if not existing.decision and thread.decision:
                    Thread.objects.filter(pk=existing.pk).update(
                        decision=thread.decision,
                        decision_text=thread.decision_text,
                        decided_by=thread.decided_by,
                        decided_at=thread.decided_at,
                    )
                thread.delete()
            moved += 1
        return moved

    def _rechecks(self) -> int:
        """Splits: each annotation that had the old mode; new modes: each annotation on the traces they were
        proposed on. Only people who can submit again get one (not LLM or imported raters)."""
        # Gold calibration answers are never re-checked: their gold was shown once they were submitted.
        people = Annotation.objects.filter(
            assignment__project=self.project, assignment__purpose="work"
        ).filter(
            receives_work_q("assignment__annotator"),
            assignment__annotator__in=Membership.objects.filter(project=self.project, active=True).values(
                "user"
            ),
        )
        wanted: dict[tuple[int, str], str] = {}
        for aid, olds in self.split_annotations.items():
            for old in olds:
                for code in self.mapping[old]:
                    wanted[(aid, code)] = f"{old} was split into {', '.join(self.mapping[old])}"
        split_ok = set(people.filter(pk__in={aid for aid, _ in wanted}).values_list("pk", flat=True))
        wanted = {key: reason for key, reason in wanted.items() if key[0] in split_ok}
        _, fresh = recheck_modes(self.mapping, list(self.new_modes))
        for code in fresh:
            ids = self.migration.proposals.get(code, [])
            traces = ModeProposal.objects.filter(project=self.project, pk__in=ids).values("trace_id")
            for aid in (
                people.filter(assignment__trace__in=traces)
                .exclude(assignment__status="skipped")
                .values_list("pk", flat=True)
            ):
                wanted.setdefault((aid, code), f"new mode {code}")
        ModeRecheck.objects.bulk_create(
            ModeRecheck(
                migration=self.migration, annotation_id=aid, mode=self.new_modes[code], reason=reason[:200]
            )
            for (aid, code), reason in wanted.items()
        )
        return len(wanted)

    def _proposals(self) -> int:
        n = 0
        for code, ids in (self.migration.proposals or {}).items():
            if code in self.new_modes:
                n += ModeProposal.objects.filter(project=self.project, pk__in=ids).update(
                    status=ModeProposal.Status.ACCEPTED, outcome=code, mode=self.new_modes[code]
                )
        return n

    def _disputed(self) -> None:
        for item in AdjudicationItem.objects.filter(project=self.project).exclude(disputed=[]):
            new = sorted(
                {
                    t
                    for code in item.disputed
                    for t in self.mapping.get(code, [code] if code in self.new_modes else [])
                }
            )
            if new != item.disputed:
                AdjudicationItem.objects.filter(pk=item.pk).update(disputed=new)


def open_rechecks(project: Project, user):
    """The user's open re-checks in the project, for their queue."""
    return (
        ModeRecheck.objects.filter(
            annotation__assignment__project=project,
            annotation__assignment__annotator=user,
            resolved_at__isnull=True,
        )
        .select_related("mode", "annotation__assignment__trace")
        .order_by("annotation__assignment__trace_id", "mode__order")
    )
