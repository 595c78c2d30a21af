"""The annotation workflow's data: projects and roles, assignments, annotations, agreement, gold, exports."""

from annotator.models.adjudication import AdjudicationItem, GoldHistory, GoldLabel
from annotator.models.annotations import Annotation, LabelApplication, LabelHistory
from annotator.models.jobs import ImportJob, JobStatus
from annotator.models.llm import LLMConfig, LLMRun, LLMTraceResult, PromptTemplate
from annotator.models.projects import Assignment, Membership, Project, Role
from annotator.models.reports import AgreementReport, Export

__all__ = [
    "AdjudicationItem",
    "AgreementReport",
    "Annotation",
    "Assignment",
    "Export",
    "GoldHistory",
    "GoldLabel",
    "ImportJob",
    "JobStatus",
    "LLMConfig",
    "LLMRun",
    "LLMTraceResult",
    "LabelApplication",
    "LabelHistory",
    "Membership",
    "Project",
    "PromptTemplate",
    "Role",
]
