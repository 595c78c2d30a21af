"""The app's navigation in one place: the top bar's links and the project page's links, grouped by the
labelling loop's order (import, label, agree, adjudicate, analyse, publish).

Each link says which roles open its page, in the same terms as the view's own `access_project` call, and the
access policy (annotator.access) decides what a member sees: a page that would answer 403 is not offered;
a page refused only while the member is still blind on some of their traces is shown, greyed, with why.
A new page gets one `Link` in the right `Step` here (and its route in tests/test_route_matrix.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from annotator.access import (
    ANY_ROLE,
    LABEL_ROLES,
    MANAGE_ROLES,
    REPORT_ROLES,
    REVIEW_ROLES,
    ProjectAccess,
    site_links_visible,
)

BLIND_REASON = "Opens once you have submitted the traces assigned to you (blind labelling)"


@dataclass(frozen=True)
class Link:
    label: str
    url_name: str
    roles: frozenset[str] = ANY_ROLE
    shows_labels: bool = False  # refused while the member is blind on any trace (access_project's flag)
    title: str = ""
    # For pages whose role rule is more than a set of roles (failure signatures): the policy's predicate.
    rule: Callable[[ProjectAccess], bool] | None = None

    def state(self, access: ProjectAccess) -> str:
        """ "open", "blind" (allowed by role, refused until the member's own traces are submitted) or "no"."""
        allowed = self.rule(access) if self.rule is not None else access.holds(self.roles)
        if not allowed:
            return "no"
        return "blind" if self.shows_labels and access.blind_count else "open"


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    links: tuple[Link, ...]


PROJECT_STEPS: tuple[Step, ...] = (
    Step(
        "import",
        "Import",
        (
            Link("Import traces", "project-import", MANAGE_ROLES, title="Upload files or a Hub dataset"),
            Link(
                "Outcomes",
                "project-outcomes",
                MANAGE_ROLES,
                title="Set imported traces' outcomes and scores from a results file (SWE-bench, CSV, JSONL)",
            ),
            Link("Members and settings", "project-members", MANAGE_ROLES, title="Members, batches, settings"),
        ),
    ),
    Step(
        "label",
        "Label",
        (
            Link(
                "My assignments", "my-assignments", LABEL_ROLES, title="Your traces: to do, drafts, submitted"
            ),
            Link("Traces and annotations", "project-traces", REVIEW_ROLES),
            Link(
                "Gold calibration",
                "calibration",
                title="Annotators against gold labels: calibration items, qualification, scores",
            ),
            Link(
                "LLM rater", "project-llm", MANAGE_ROLES, title="A model labels the traces as one more rater"
            ),
            Link(
                "LLM triage",
                "project-triage",
                MANAGE_ROLES,
                shows_labels=True,
                title="Order the human queue by what the model said",
            ),
        ),
    ),
    Step(
        "agree",
        "Agree",
        (
            Link("Agreement report", "agreement", REPORT_ROLES, shows_labels=True),
            Link(
                "Calibration rounds",
                "rounds",
                REPORT_ROLES,
                shows_labels=True,
                title="Rounds of shared traces and their agreement trend",
            ),
            Link(
                "Proposed modes",
                "proposals",
                LABEL_ROLES | REVIEW_ROLES,
                title="Failures the taxonomy lacks, as annotators described them",
            ),
        ),
    ),
    Step("adjudicate", "Adjudicate", (Link("Adjudication queue", "adjudication", REVIEW_ROLES),)),
    Step(
        "analyse",
        "Analyse",
        (
            Link(
                "Failure signatures",
                "project-signatures",
                shows_labels=True,
                title="Which modes break runs, where, and how often per model",
                rule=ProjectAccess.holds_signature_role,
            ),
            Link(
                "Discover modes",
                "discovery",
                REVIEW_ROLES,
                shows_labels=True,
                title="Modes the taxonomy lacks, induced from the traces and gated by agreement",
            ),
            Link(
                "Codebook",
                "codebook",
                MANAGE_ROLES,
                shows_labels=True,
                title="Derive the next taxonomy version and move the project to it",
            ),
        ),
    ),
    Step("publish", "Publish", (Link("Export dataset", "project-export", MANAGE_ROLES, shows_labels=True),)),
)


def project_nav(access: ProjectAccess, steps: tuple[Step, ...] = PROJECT_STEPS) -> list[dict[str, Any]]:
    """The steps with the links this member may see, in the loop's order; steps with none are left out."""
    slug = access.project.slug
    shown = []
    for step in steps:
        links = []
        for link in step.links:
            state = link.state(access)
            if state == "no":
                continue
            links.append(
                {
                    "label": link.label,
                    "url": reverse(link.url_name, args=[slug]),
                    "title": BLIND_REASON if state == "blind" else link.title,
                    "blocked": state == "blind",
                }
            )
        if links:
            shown.append({"key": step.key, "label": step.label, "links": links})
    return shown


def site_nav(user) -> dict[str, list[dict[str, str]]]:
    """The top bar: the main links, and the user's own menu (their mentions, and where per-user settings
    such as API tokens belong)."""
    visible = site_links_visible(user)
    main = [
        {"label": "Projects", "url": reverse("home")},
        *([{"label": "Traces", "url": reverse("batch-list")}] if visible["batches"] else []),
        {"label": "Taxonomies", "url": reverse("taxonomy-list")},
        {"label": "API", "url": reverse("api-docs")},
    ]
    user_menu = [
        {"label": "Mentions", "url": reverse("mentions")},
        {"label": "API tokens", "url": reverse("account-tokens")},
    ]
    return {"main": main, "user": user_menu}
