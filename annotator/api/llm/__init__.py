"""The LLM rater's API: settings (endpoint, key, prompt), runs, and what the model said (agreement, labels)."""

from annotator.api.llm.agreement import LLMAgreement, LLMLabelsForMe
from annotator.api.llm.runs import LLMRunDetail, LLMRunList, LLMRunPreview, LLMRunResume, LLMRunStop
from annotator.api.llm.settings import LLMKey, LLMPrompt, LLMSettings

__all__ = [
    "LLMAgreement",
    "LLMKey",
    "LLMLabelsForMe",
    "LLMPrompt",
    "LLMRunDetail",
    "LLMRunList",
    "LLMRunPreview",
    "LLMRunResume",
    "LLMRunStop",
    "LLMSettings",
]
