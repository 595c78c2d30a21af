"""Summary lines that more than one command prints."""

from __future__ import annotations

from django.core.management.base import BaseCommand


def report_attribution_conflicts(command: BaseCommand, conflicts: list[str]) -> None:
    """Attributions that contradict their own trace: stored as given, and every one of them said."""
    if conflicts:
        command.stdout.write(
            command.style.WARNING(f"{len(conflicts)} attributions name another agent than their step's:")
        )
        for conflict in conflicts:
            command.stdout.write(f"  {conflict}")
