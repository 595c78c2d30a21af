"""My assignments and my annotation (read, save draft, submit, skip); everyone's, for reviewers only.

Blind by construction: an assignment is looked up among the caller's own (annotator.access), so another
annotator's slot is a 404; listing all annotations of a trace needs the owner or adjudicator role (403).
Writes go through annotator.services.annotations, the same verbs as the page: a stale `version` is 409
with the caller's payload echoed back, a locked trace is 409, an invalid annotation is 400.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import (
    LABEL_ROLES,
    REVIEW_ROLES,
    ProjectAccess,
    access_assignment,
    access_project,
    access_trace,
)
from annotator.api.errors import AnnotationConflictSerializer, ErrorSerializer, error_response
from annotator.models import Annotation, Assignment, LabelApplication
from annotator.prepared import PreparedQuery
from annotator.services.annotations import (
    AnnotationInvalid,
    AnnotationLocked,
    StaleAnnotation,
    do_save_draft,
    do_skip,
    do_submit_annotation,
)
from annotator.services.assignment import do_claim_next
from annotator.services.calibration import gate
from annotator.services.locking import is_locked
from annotator.services.payload import PayloadError, payload_from_json
from taxonomy.models import FailureMode


class EvidenceSerializer(serializers.Serializer):
    step = serializers.IntegerField(min_value=0)
    quote = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class LabelSerializer(serializers.Serializer):
    # A failure mode's code; resolved for all labels at once by AnnotationWriteSerializer.validate_labels.
    mode = serializers.CharField()
    primary = serializers.BooleanField(default=False)
    evidence = EvidenceSerializer(many=True, required=False)
    note = serializers.CharField(required=False, allow_blank=True, max_length=10_000)

    def to_representation(self, label: LabelApplication) -> dict[str, Any]:
        return {
            "mode": label.mode.code,
            "primary": label.primary,
            "evidence": label.evidence,
            "note": label.note,
        }


# One prepared query (annotator.prepared) per number of distinct codes in a save, up to this many; a larger
# label set goes through the ORM.
_PREPARED_CODES = 16
_MODES: dict[int, PreparedQuery] = {}


def _modes(version_id: int, codes: set[str]) -> list[FailureMode]:
    """The modes of taxonomy version `version_id` among `codes` (codes of other versions do not resolve)."""
    if not 0 < len(codes) <= _PREPARED_CODES:
        return list(FailureMode.objects.filter(version_id=version_id, code__in=codes))
    names = [f"code{i}" for i in range(len(codes))]
    query = _MODES.get(len(codes))
    if query is None:
        query = _MODES[len(codes)] = PreparedQuery(
            lambda version, **code: FailureMode.objects.filter(
                version_id=version, code__in=list(code.values())
            ),
            version=int,
            **dict.fromkeys(names, str),
        )
    return query.objects(version=version_id, **dict(zip(names, sorted(codes), strict=True)))


class AnnotationWriteSerializer(serializers.Serializer):
    version = serializers.IntegerField(
        min_value=0, help_text="The version your edit is based on (0: none yet)"
    )
    labels = LabelSerializer(many=True, required=False)
    no_failure = serializers.BooleanField(default=False)
    ambiguous = serializers.BooleanField(default=False)
    confidence = serializers.IntegerField(min_value=1, max_value=5, required=False, allow_null=True)
    note = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    elapsed_seconds = serializers.IntegerField(min_value=0, required=False, default=0)

    def validate_labels(self, labels: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One query for every label's mode, scoped to the project in the URL: a mode of another taxonomy
        (or version) does not resolve. The modes ride along in `self.modes` for the annotation verbs."""
        project = self.context["project"]
        codes = {label["mode"] for label in labels}
        self.modes = {mode.code: mode for mode in _modes(project.taxonomy_version_id, codes)}
        errors = [
            {"mode": [f"Object with code={label['mode']} does not exist."]}
            if label["mode"] not in self.modes
            else {}
            for label in labels
        ]
        if any(errors):
            raise serializers.ValidationError(errors)
        return labels


class AnnotationSerializer(serializers.ModelSerializer):
    assignment = serializers.IntegerField(source="assignment_id", read_only=True)
    trace = serializers.IntegerField(source="assignment.trace_id", read_only=True)
    status = serializers.ChoiceField(
        Annotation.Status.choices, allow_null=True, read_only=True, help_text="null: nothing saved yet"
    )
    updated_at = serializers.DateTimeField(allow_null=True, read_only=True)
    labels = LabelSerializer(many=True, read_only=True)
    editable = serializers.SerializerMethodField(help_text="False once adjudication of the trace has started")

    class Meta:
        model = Annotation
        fields = [
            "assignment",
            "trace",
            "status",
            "version",
            "no_failure",
            "ambiguous",
            "confidence",
            "note",
            "time_spent_seconds",
            "submitted_at",
            "updated_at",
            "labels",
            "editable",
        ]

    def get_editable(self, annotation: Annotation) -> bool:
        locked = self.context.get("locked")  # a submit just read it under the assignment's lock
        return not (is_locked(annotation.assignment) if locked is None else locked)

    def to_representation(self, annotation: Annotation | _Unsaved) -> dict[str, Any]:
        """What the declared fields give (a test holds the two equal), without building them: a
        ModelSerializer makes its fields anew from the model for every answer, a good part of a draft
        save's CPU time (bench/bench_annotators.py)."""
        return {
            "assignment": annotation.assignment_id,
            "trace": annotation.assignment.trace_id,
            "status": annotation.status,
            "version": annotation.version,
            "no_failure": bool(annotation.no_failure),
            "ambiguous": bool(annotation.ambiguous),
            "confidence": annotation.confidence,
            "note": annotation.note,
            "time_spent_seconds": annotation.time_spent_seconds,
            "submitted_at": _datetime(annotation.submitted_at),
            "updated_at": _datetime(annotation.updated_at),
            "labels": [_LABEL.to_representation(label) for label in _all(annotation.labels)],
            "editable": self.get_editable(annotation),
        }


_DATETIME = serializers.DateTimeField()
_LABEL = LabelSerializer()


def _datetime(value) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


def _all(labels) -> Any:
    return labels.all() if hasattr(labels, "all") else labels


class ReviewAnnotationSerializer(AnnotationSerializer):
    annotator = serializers.CharField(source="assignment.annotator.username", read_only=True)
    assignment_status = serializers.CharField(source="assignment.status", read_only=True)

    class Meta(AnnotationSerializer.Meta):
        fields = ["annotator", "assignment_status", *AnnotationSerializer.Meta.fields]

    def to_representation(self, annotation: Annotation) -> dict[str, Any]:
        assignment = annotation.assignment
        return {
            "annotator": assignment.annotator.username,
            "assignment_status": assignment.status,
            **super().to_representation(annotation),
        }


class AssignmentSerializer(serializers.ModelSerializer):
    trace_external_id = serializers.CharField(source="trace.external_id", read_only=True)
    batch = serializers.CharField(source="trace.batch.name", read_only=True)
    purpose = serializers.SerializerMethodField(
        help_text="work or calibration (a gold item); null until submitted, so a gold item is labelled like "
        "any other"
    )

    class Meta:
        model = Assignment
        fields = [
            "id",
            "trace",
            "trace_external_id",
            "batch",
            "status",
            "skip_reason",
            "reserved_until",
            "purpose",
        ]

    @extend_schema_field(serializers.ChoiceField(choices=Assignment.Purpose.choices, allow_null=True))
    def get_purpose(self, assignment: Assignment) -> str | None:
        return assignment.purpose if assignment.status == Assignment.Status.SUBMITTED else None

    def to_representation(self, assignment: Assignment) -> dict[str, Any]:
        """What the declared fields give (see AnnotationSerializer.to_representation)."""
        trace = assignment.trace
        return {
            "id": assignment.pk,
            "trace": assignment.trace_id,
            "trace_external_id": trace.external_id,
            "batch": trace.batch.name,
            "status": assignment.status,
            "skip_reason": assignment.skip_reason,
            "reserved_until": _datetime(assignment.reserved_until),
            "purpose": self.get_purpose(assignment),
        }


class SkipSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000)


@dataclass
class _Unsaved:
    """What AnnotationSerializer shows for an assignment with nothing saved yet."""

    assignment: Assignment
    status: None = None
    version: int = 0
    no_failure: bool = False
    ambiguous: bool = False
    confidence: None = None
    note: str = ""
    time_spent_seconds: int = 0
    submitted_at: None = None
    updated_at: None = None
    labels: list = field(default_factory=list)

    @property
    def assignment_id(self) -> int:
        return self.assignment.pk


def _annotation(assignment: Assignment) -> dict[str, Any]:
    annotation = (
        Annotation.objects.filter(assignment=assignment)
        .select_related("assignment")
        .prefetch_related("labels__mode")
        .first()
    )
    return AnnotationSerializer(annotation or _Unsaved(assignment)).data


class _Write(APIView):
    """Shared by draft and submit: validate the body (scoped modes), call the verb, map its errors."""

    verb = staticmethod(do_save_draft)

    def write(self, request: Request, slug: str, assignment_id: int) -> Response:
        # The verb's locking read is the assignment's access check (ProjectAccess.assignment_to_lock).
        access = ProjectAccess.load(request.user, slug)
        assignment = access.assignment_to_lock(assignment_id)
        body = AnnotationWriteSerializer(data=request.data, context={"project": access.project})
        if not body.is_valid():
            access.assignment(assignment_id)  # someone else's slot is 404 whatever the body says
            raise serializers.ValidationError(body.errors)
        data = dict(body.validated_data)
        try:
            payload = payload_from_json(data)
            annotation = self.verb(
                assignment,
                payload,
                actor=request.user,
                base_version=data["version"],
                modes=getattr(body, "modes", None),
            )
        except StaleAnnotation as error:
            return error_response(
                str(error),
                status=status.HTTP_409_CONFLICT,
                serializer=AnnotationConflictSerializer,
                code="stale",
                current_version=error.current_version,
                your_payload=request.data,
            )
        except AnnotationLocked as error:
            return error_response(
                str(error),
                status=status.HTTP_409_CONFLICT,
                serializer=AnnotationConflictSerializer,
                code="locked",
                your_payload=request.data,
            )
        except (AnnotationInvalid, PayloadError) as error:
            if isinstance(error, PayloadError):  # found before the verb's read: 404 first, as above
                access.assignment(assignment_id)
            return error_response("The annotation is not valid", status=400, errors=error.messages)
        except Assignment.DoesNotExist:
            raise Http404("No such assignment") from None
        # The verb hands back the annotation with its assignment and labels (and, after a submit, the lock
        # rule's answer): nothing to read again.
        locked = getattr(annotation.assignment, "locked_after_save", None)
        return Response(AnnotationSerializer(annotation, context={"locked": locked}).data)


_WRITE_RESPONSES = {200: AnnotationSerializer, 400: ErrorSerializer, 409: AnnotationConflictSerializer}


class MyAnnotation(_Write):
    """My annotation of one of my assignments. PUT saves a draft (based on `version`)."""

    @extend_schema(responses=AnnotationSerializer)
    def get(self, request: Request, slug: str, assignment_id: int) -> Response:
        return Response(_annotation(access_assignment(request.user, slug, assignment_id)))

    @extend_schema(request=AnnotationWriteSerializer, responses=_WRITE_RESPONSES)
    def put(self, request: Request, slug: str, assignment_id: int) -> Response:
        return self.write(request, slug, assignment_id)


class SubmitAnnotation(_Write):
    """Submit my annotation (or re-submit an edit, until adjudication of the trace starts)."""

    verb = staticmethod(do_submit_annotation)

    @extend_schema(request=AnnotationWriteSerializer, responses=_WRITE_RESPONSES)
    def post(self, request: Request, slug: str, assignment_id: int) -> Response:
        return self.write(request, slug, assignment_id)


class SkipAssignment(APIView):
    @extend_schema(request=SkipSerializer, responses={200: AssignmentSerializer, 400: ErrorSerializer})
    def post(self, request: Request, slug: str, assignment_id: int) -> Response:
        assignment = access_assignment(request.user, slug, assignment_id)
        body = SkipSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            assignment = do_skip(assignment, body.validated_data["reason"], actor=request.user)
        except (AnnotationInvalid, AnnotationLocked) as error:
            return error_response("Cannot skip", status=400, errors=error.messages)
        return Response(AssignmentSerializer(assignment).data)


class MyAssignmentList(generics.ListAPIView):
    """My assignments in the project, in queue order; `?status=pending|in_progress|submitted|skipped`."""

    serializer_class = AssignmentSerializer

    def get_queryset(self):
        mine = ProjectAccess.load(self.request.user, self.kwargs["slug"]).assignments()
        wanted = self.request.query_params.get("status")
        if wanted in Assignment.Status.values:
            mine = mine.filter(status=wanted)
        return mine.select_related("trace__batch").order_by("trace_id", "id")


class ClaimNext(APIView):
    """Reserve my next open assignment (as "Start next" does); 204 when my queue is empty."""

    @extend_schema(
        request=None,
        responses={
            200: AssignmentSerializer,
            204: OpenApiResponse(description="My queue is empty"),
            403: OpenApiResponse(
                ErrorSerializer, description="The project's gold qualification holds back real work (why)"
            ),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        project = access_project(request.user, slug, roles=LABEL_ROLES)
        assignment = do_claim_next(project, request.user)
        if assignment is None:
            held = gate(project, request.user)
            if held.blocked:
                return error_response(held.reason, status=status.HTTP_403_FORBIDDEN)
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(assignment).data)


class TraceAnnotationList(generics.ListAPIView):
    """Every annotation of a trace, side by side: owners and adjudicators only (annotators get 403)."""

    serializer_class = ReviewAnnotationSerializer
    pagination_class = None

    def get_queryset(self):
        project, trace = access_trace(
            self.request.user, self.kwargs["slug"], self.kwargs["trace_id"], roles=REVIEW_ROLES, labels=True
        )
        return (
            project.access.annotations()
            .filter(assignment__trace=trace)
            .select_related("assignment__annotator")
            .prefetch_related("labels__mode")
            .order_by("assignment__annotator__username")
        )
