"""GET the failure signatures of a project as JSON, with the page's filters as query parameters."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from annotator.api.errors import ErrorSerializer, error_response
from annotator.api.signature_serializers import SignatureReportSerializer
from annotator.services.signatures.report import build_report, open_signatures


def _filter(name: str, what: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        OpenApiTypes.STR,
        many=True,
        explode=True,
        description=f"Only traces of this {what} (repeat for several)",
    )


@extend_schema(
    summary="Failure signatures: prevalence, modes per trace, benign vs fatal, co-occurrence, positions",
    description=(
        "Computed from gold labels by default. Owners, adjudicators and viewers; annotators only when the "
        "project is not blind. `source=annotator:NAME` is for owners and adjudicators (or NAME)."
    ),
    parameters=[
        OpenApiParameter(
            "source",
            OpenApiTypes.STR,
            description="gold (default), union, agreed, annotator:NAME, or gold+union / gold+agreed / "
            "gold+annotator:NAME (gold where it exists, else the named source)",
        ),
        _filter("batch", "batch"),
        _filter("model", "model"),
        _filter("system", "agent system"),
        _filter("benchmark", "benchmark"),
        OpenApiParameter(
            "view",
            OpenApiTypes.STR,
            description="A saved view's id or name: only its traces (/api/.../views/)",
        ),
        OpenApiParameter("compare_a", OpenApiTypes.STR, description="Batch A (before) of the comparison"),
        OpenApiParameter("compare_b", OpenApiTypes.STR, description="Batch B (after) of the comparison"),
    ],
    responses={
        200: SignatureReportSerializer,
        400: OpenApiResponse(
            ErrorSerializer, description="An unknown source or half a comparison; `detail` says which"
        ),
    },
)
@api_view(["GET"])
def project_signatures(request, slug: str):
    project, query, error = open_signatures(request.user, slug, request.query_params)
    if error:
        return error_response(error, status=400)
    return Response(SignatureReportSerializer(build_report(project, query)).data)
