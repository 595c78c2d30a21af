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
