"""API routes under /api/projects/<slug>/ for the LLM rater (annotator/api/llm.py)."""

from django.urls import path

from annotator.api import llm

urlpatterns = [
    path("llm-runs/", llm.LLMRunList.as_view(), name="api-llm-runs"),
    path("llm-runs/<int:run_id>/", llm.LLMRunDetail.as_view(), name="api-llm-run"),
    path("llm-settings/", llm.LLMSettings.as_view(), name="api-llm-settings"),
    path("llm-settings/key/", llm.LLMKey.as_view(), name="api-llm-key"),
    path("llm-settings/prompt/", llm.LLMPrompt.as_view(), name="api-llm-prompt"),
    path("llm-runs/preview/", llm.LLMRunPreview.as_view(), name="api-llm-run-preview"),
    path("llm-runs/<int:run_id>/stop/", llm.LLMRunStop.as_view(), name="api-llm-run-stop"),
    path("llm-runs/<int:run_id>/resume/", llm.LLMRunResume.as_view(), name="api-llm-run-resume"),
    path("llm-agreement/", llm.LLMAgreement.as_view(), name="api-llm-agreement"),
    path("assignments/<int:assignment_id>/llm-labels/", llm.LLMLabelsForMe.as_view(), name="api-llm-labels"),
]
