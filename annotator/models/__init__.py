"""The annotation workflow's data: projects and roles, assignments, annotations, agreement, gold, exports."""

from annotator.models.adjudication import AdjudicationItem, GoldLabel
from annotator.models.annotations import Annotation, LabelApplication, LabelHistory
from annotator.models.projects import Assignment, Membership, Project, Role
from annotator.models.reports import AgreementReport, Export

__all__ = [
    "AdjudicationItem",
    "AgreementReport",
    "Annotation",
    "Assignment",
    "Export",
    "GoldLabel",
    "LabelApplication",
    "LabelHistory",
    "Membership",
    "Project",
    "Role",
]
