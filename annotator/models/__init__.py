"""The annotation workflow's data: projects and roles, assignments, annotations, agreement, gold, exports."""

from annotator.models.adjudication import AdjudicationItem, GoldHistory, GoldLabel
from annotator.models.annotations import Annotation, LabelApplication, LabelHistory
from annotator.models.discovery import DiscoveryAnswer, DiscoveryRun
from annotator.models.discussions import Comment, Mention, Thread
from annotator.models.evolution import ModeRecheck, TaxonomyMigration
from annotator.models.jobs import ImportJob, JobStatus
from annotator.models.live import LiveSettings, LiveTrace, PendingLog, PendingSpan, SpanBatch
from annotator.models.llm import LLMConfig, LLMRun, LLMTraceResult, PromptTemplate
from annotator.models.outcomes import OutcomeImport
from annotator.models.projects import (
    Assignment,
    CalibrationItem,
    Membership,
    Project,
    ProjectTrace,
    QueueOrder,
    Role,
    TriageRank,
)
from annotator.models.proposals import ModeProposal
from annotator.models.raters import Rater, RaterKind
from annotator.models.reports import AgreementReport, Export, ReportRows
from annotator.models.rounds import CalibrationRound
from annotator.models.signatures import AnnotationDeletion
from annotator.models.similar import TraceRepresentation, TraceVector
from annotator.models.tokens import ApiToken
from annotator.models.views import SavedView

__all__ = [
    "AdjudicationItem",
    "AgreementReport",
    "Annotation",
    "AnnotationDeletion",
    "ApiToken",
    "Assignment",
    "CalibrationItem",
    "CalibrationRound",
    "Comment",
    "DiscoveryAnswer",
    "DiscoveryRun",
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
    "LiveSettings",
    "LiveTrace",
    "Membership",
    "Mention",
    "ModeProposal",
    "ModeRecheck",
    "OutcomeImport",
    "PendingLog",
    "PendingSpan",
    "Project",
    "ProjectTrace",
    "PromptTemplate",
    "QueueOrder",
    "Rater",
    "RaterKind",
    "ReportRows",
    "Role",
    "SavedView",
    "SpanBatch",
    "TaxonomyMigration",
    "Thread",
    "TraceRepresentation",
    "TraceVector",
    "TriageRank",
]
