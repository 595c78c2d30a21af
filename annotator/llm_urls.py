"""Pages under /p/<slug>/llm/: the owner's LLM rater settings, prompt versions, runs and agreement."""

from django.urls import path

from annotator.views import llm

urlpatterns = [
    path("", llm.llm_page, name="project-llm"),
    path("config/", llm.save_config, name="project-llm-config"),
    path("key/", llm.save_key, name="project-llm-key"),
    path("prompt/", llm.save_prompt, name="project-llm-prompt"),
    path("runs/", llm.start_run, name="project-llm-start"),
    path("runs/<int:run_id>/", llm.run_status, name="project-llm-run"),
    path("runs/<int:run_id>/stop/", llm.run_action, {"action": "stop"}, name="project-llm-run-stop"),
    path("runs/<int:run_id>/resume/", llm.run_action, {"action": "resume"}, name="project-llm-run-resume"),
    path("agreement/", llm.agreement, name="project-llm-agreement"),
]
