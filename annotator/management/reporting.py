"""Summary lines that more than one command prints."""

from __future__ import annotations

from django.core.management.base import BaseCommand


def report_attribution_conflicts(command: BaseCommand, conflicts: list[str]) -> None:
    """Attributions that contradict their own trace: stored as given, and every one of them said."""
    if conflicts:
        many = len(conflicts) != 1
        command.stdout.write(
            command.style.WARNING(
                f"{len(conflicts)} attribution{'s' if many else ''} name{'' if many else 's'} another agent "
                "than the one who spoke the attributed step (stored as given):"
            )
        )
        for conflict in conflicts:
            command.stdout.write(f"  {conflict}")


def report_label_details(command: BaseCommand, result) -> None:
    """What a label import left out or found odd (a LabelImportResult): records with nothing usable, votes the
    source left out, labels of modes the taxonomy lacks, contradicting attributions."""
    if result.empty:
        command.stdout.write(
            f"  {result.empty} records had nothing usable (no label in the taxonomy, no 'no failure'): "
            "not stored"
        )
    for mode, count in result.missing_votes.most_common():
        command.stdout.write(f"  {count} votes on {mode} missing in the source: kept as missing")
    for mode, count in result.ignored_modes.most_common():
        command.stdout.write(f"  ignored {count} labels of unknown mode {mode!r}")
    report_attribution_conflicts(command, result.attribution_conflicts)
