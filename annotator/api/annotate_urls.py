"""API routes under /api/projects/<slug>/: traces, steps, search, my assignments and my annotation."""

from django.urls import path

from annotator.api import annotations, traces

urlpatterns = [
    path("traces/", traces.ProjectTraceList.as_view(), name="api-project-traces"),
    path("traces/<int:trace_id>/", traces.ProjectTraceDetail.as_view(), name="api-trace"),
    path("traces/<int:trace_id>/steps/", traces.TraceStepList.as_view(), name="api-trace-steps"),
    path("traces/<int:trace_id>/search/", traces.TraceSearch.as_view(), name="api-trace-search"),
    path(
        "traces/<int:trace_id>/annotations/",
        annotations.TraceAnnotationList.as_view(),
        name="api-trace-annotations",
    ),
    path("assignments/", annotations.MyAssignmentList.as_view(), name="api-my-assignments"),
    path("assignments/next/", annotations.ClaimNext.as_view(), name="api-claim-next"),
    path(
        "assignments/<int:assignment_id>/annotation/",
        annotations.MyAnnotation.as_view(),
        name="api-my-annotation",
    ),
    path(
        "assignments/<int:assignment_id>/submit/", annotations.SubmitAnnotation.as_view(), name="api-submit"
    ),
    path("assignments/<int:assignment_id>/skip/", annotations.SkipAssignment.as_view(), name="api-skip"),
]
