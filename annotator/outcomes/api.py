"""`POST /api/projects/<slug>/outcomes/`: a results file sets the outcomes, scores and metadata of the
project's traces, all or nothing (owners). The same verb as the page and `import_outcomes`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.outcomes.parse import MAX_BYTES, MAX_PROBLEMS, OutcomeFileError
from annotator.outcomes.service import do_import_outcomes
from annotator.outcomes.views import UploadError, read_upload


class OutcomesRequest(serializers.Serializer):
    file = serializers.FileField(
        help_text="SWE-bench run report or per-instance report.json, or CSV/JSONL of external_id, outcome, "
        f"score and metadata columns; at most {MAX_BYTES:,} bytes"
    )
    dry_run = serializers.BooleanField(default=False, help_text="Check and count; change nothing")
    ignore_unknown = serializers.BooleanField(
        default=False, help_text="Skip ids this project does not hold instead of refusing the file"
    )


class OutcomesResult(serializers.Serializer):
    format = serializers.CharField(help_text="swebench-report, swebench-instances, csv or jsonl")
    traces = serializers.IntegerField(help_text="Traces the file names")
    changed = serializers.IntegerField(help_text="Traces whose outcome, score or metadata changed (or would)")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Outcome -> traces named")
    dry_run = serializers.BooleanField()
    skipped = serializers.IntegerField(help_text="Ids this project does not hold, skipped (ignore_unknown)")


@extend_schema(
    summary="Set outcomes and scores of the project's traces from a results file keyed by external id "
    "(owners; all or nothing)",
    request={"multipart/form-data": OutcomesRequest},
    responses={
        200: OutcomesResult,
        400: OpenApiResponse(ErrorSerializer, description="Nothing changed: every bad record, by line or id"),
    },
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def import_outcomes(request: Request, slug: str) -> Response:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    body = OutcomesRequest(data=request.data)
    body.is_valid(raise_exception=True)
    upload = body.validated_data["file"]
    try:
        result = do_import_outcomes(
            project,
            read_upload(upload),
            filename=upload.name,
            actor=request.user,
            dry_run=body.validated_data["dry_run"],
            ignore_unknown=body.validated_data["ignore_unknown"],
        )
    except UploadError as error:
        return error_response(str(error), status=status.HTTP_400_BAD_REQUEST, errors=[str(error)])
    except OutcomeFileError as error:
        problems = error.problems[:MAX_PROBLEMS]
        message = f"Nothing changed: {upload.name} has {len(error.problems)} problem(s)"
        return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=problems)
    return Response(
        OutcomesResult(
            {
                "format": result.format,
                "traces": result.traces,
                "changed": result.changed,
                "counts": result.counts,
                "dry_run": result.dry_run,
                "skipped": result.skipped,
            }
        ).data
    )
