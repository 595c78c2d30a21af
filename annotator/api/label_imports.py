"""Import existing labels over the API (the CLI's `import_annotations`): label files posted to a project,
stored as submitted annotations, all or nothing. Owners only; an archived project takes none.

Label files are small next to trace files, so the import runs within the request like the command does;
the upload is bounded by IMPORT_MAX_UPLOAD_MB and every parser's own limits.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.access import MANAGE_ROLES, access_project
from annotator.api.errors import ErrorSerializer, error_response
from annotator.services.annotation_files import LABEL_FORMATS, read_label_file
from annotator.services.label_import import LabelImportError, do_import_annotations, parse_rater_map
from annotator.services.uploads import max_upload_bytes, upload_too_large_message
from traces.importers.records import TraceFormatError


class LabelImportRequest(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), min_length=1, max_length=100)
    format = serializers.ChoiceField(LABEL_FORMATS, required=False, help_text="Empty: detect per file")
    ignore_unknown_modes = serializers.BooleanField(default=False)
    map_rater = serializers.ListField(
        child=serializers.CharField(max_length=300),
        default=list,
        max_length=100,
        help_text="NAME=USERNAME: the file's rater NAME is that account (staff only); else imported raters",
    )


class LabelImportResult(serializers.Serializer):
    created = serializers.IntegerField(help_text="Annotations stored")
    unchanged = serializers.IntegerField(help_text="Already present, left as they were")
    labels = serializers.IntegerField()
    empty = serializers.IntegerField(
        help_text="Records with nothing usable (no label in the taxonomy, no 'no failure'), not stored"
    )
    users_created = serializers.ListField(child=serializers.CharField(), help_text="New imported raters")
    ignored_modes = serializers.DictField(child=serializers.IntegerField())
    missing_votes = serializers.DictField(child=serializers.IntegerField())
    attribution_conflicts = serializers.ListField(child=serializers.CharField())


@extend_schema(
    summary="Import labels from files as submitted annotations, all or nothing (owners only)",
    request={"multipart/form-data": LabelImportRequest},
    responses={
        201: LabelImportResult,
        400: OpenApiResponse(
            ErrorSerializer, description="Nothing imported: what is wrong, naming file and record"
        ),
        413: OpenApiResponse(ErrorSerializer, description="The files are larger than IMPORT_MAX_UPLOAD_MB"),
    },
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def import_labels(request: Request, slug: str) -> Response:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    if project.archived_at is not None:
        message = "This project is archived: it takes no new labels."
        return error_response(message, status=status.HTTP_400_BAD_REQUEST, errors=[message])
    data = {
        "files": request.FILES.getlist("files"),
        "ignore_unknown_modes": request.data.get("ignore_unknown_modes", False),
        "map_rater": request.data.getlist("map_rater") if hasattr(request.data, "getlist") else [],
    }
    if request.data.get("format"):
        data["format"] = request.data["format"]
    body = LabelImportRequest(data=data)
    body.is_valid(raise_exception=True)
    files = body.validated_data["files"]
    size = sum(upload.size or 0 for upload in files)
    if size > max_upload_bytes():
        return error_response(upload_too_large_message(size), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    try:
        rater_map = parse_rater_map(body.validated_data["map_rater"])
        with tempfile.TemporaryDirectory(prefix="labels-") as folder:
            paths = []
            for index, upload in enumerate(files):
                name = Path(upload.name).name or "labels"
                # The file's own name namespaces its raters and names it in messages (never the temp path).
                path = Path(folder) / f"{index:03d}" / name
                path.parent.mkdir()
                with path.open("wb") as out:
                    for chunk in upload.chunks():
                        out.write(chunk)
                paths.append((path, name))
            incoming = (
                annotation
                for path, name in paths
                for annotation in read_label_file(project, path, body.validated_data.get("format"), name=name)
            )
            result = do_import_annotations(
                project,
                incoming,
                ignore_unknown_modes=body.validated_data["ignore_unknown_modes"],
                actor=request.user,
                rater_map=rater_map,
            )
    except (LabelImportError, TraceFormatError) as error:
        return error_response(
            f"Nothing imported: {error}", status=status.HTTP_400_BAD_REQUEST, errors=[str(error)]
        )
    return Response(LabelImportResult(result).data, status=status.HTTP_201_CREATED)
