"""Forms of the LLM rater settings page. The API key has its own form and never comes back from the server."""

from __future__ import annotations

from urllib.parse import urlsplit

from django import forms
from django.conf import settings

from annotator.llm.prompt import MIN_BUDGET
from annotator.llm.secrets import allowed_key_envs
from annotator.llm.urlguard import UnsafeBaseURL, check_base_url
from annotator.llm.windows import MAX_OVERLAP
from annotator.models import LLMConfig
from annotator.models.llm import MAX_CONCURRENCY


class LLMConfigForm(forms.ModelForm):
    base_url = forms.CharField(
        max_length=500,
        label="Base URL",
        help_text="Up to /v1; /chat/completions is added. A private or local address only if the administrator "
        "allows it (LLM_ALLOWED_BASE_URLS)",
    )
    # Only the variables the administrator lists (LLM_KEY_ENVS): an owner never names an arbitrary one.
    api_key_env = forms.ChoiceField(required=False, label="API key environment variable")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["concurrency"].required = False
        self.fields["concurrency"].widget.attrs.update(min=1, max=MAX_CONCURRENCY)
        names = sorted(allowed_key_envs())
        self.fields["api_key_env"].choices = [("", "none (store a key below, or no key)")] + [
            (name, f"${name}") for name in names
        ]
        self.fields["api_key_env"].help_text = (
            "Variables the administrator allows (LLM_KEY_ENVS)" if names else "The administrator allows none"
        )

    class Meta:
        model = LLMConfig
        fields = [
            "base_url",
            "model",
            "api_key_env",
            "temperature",
            "max_tokens",
            "requests_per_minute",
            "concurrency",
            "token_cap",
            "prompt_price_per_million",
            "completion_price_per_million",
            "timeout_seconds",
            "max_trace_chars",
            "long_traces",
            "window_overlap_steps",
            "embedding_model",
            "json_mode",
            "show_to_annotators",
        ]
        labels = {
            "base_url": "Base URL",
            "api_key_env": "API key environment variable",
            "requests_per_minute": "Requests per minute",
            "concurrency": "Requests in flight at once",
            "token_cap": "Token cap per run",
            "timeout_seconds": "Request timeout (seconds)",
            "max_trace_chars": "Trace budget (characters)",
            "long_traces": "Traces over the budget",
            "window_overlap_steps": "Window overlap (steps)",
            "embedding_model": "Embedding model (discovery)",
            "prompt_price_per_million": "Price per million prompt tokens",
            "completion_price_per_million": "Price per million completion tokens",
            "json_mode": "Ask for JSON mode",
            "show_to_annotators": "Show the LLM's labels to annotators after they submit",
        }

    def clean_base_url(self) -> str:
        # Not URLValidator: it refuses hosts without a dot, such as a docker-compose service ("http://vllm:8000/v1").
        url = self.cleaned_data["base_url"].strip().rstrip("/").removesuffix("/chat/completions")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or any(ch.isspace() for ch in url):
            raise forms.ValidationError("Use an http:// or https:// URL, e.g. https://api.openai.com/v1")
        try:
            check_base_url(url, settings.LLM_ALLOWED_BASE_URLS)
        except UnsafeBaseURL as error:
            raise forms.ValidationError(str(error)) from None
        return url

    def clean_temperature(self) -> float:
        value = self.cleaned_data["temperature"]
        if not 0 <= value <= 2:
            raise forms.ValidationError("From 0 to 2 (0 makes answers repeatable)")
        return value

    def clean_max_tokens(self) -> int:
        value = self.cleaned_data["max_tokens"]
        if not 16 <= value <= 100_000:
            raise forms.ValidationError("From 16 to 100,000")
        return value

    def clean_requests_per_minute(self) -> int:
        value = self.cleaned_data["requests_per_minute"]
        if not 1 <= value <= 100_000:
            raise forms.ValidationError("From 1 to 100,000")
        return value

    def clean_concurrency(self) -> int:
        value = self.cleaned_data["concurrency"]
        if value is None:  # left out (an API client or an older form): keep what is set
            return self.instance.concurrency
        if not 1 <= value <= MAX_CONCURRENCY:
            raise forms.ValidationError(f"From 1 to {MAX_CONCURRENCY} requests at once")
        return value

    def clean_timeout_seconds(self) -> float:
        value = self.cleaned_data["timeout_seconds"]
        if not 1 <= value <= 3_600:
            raise forms.ValidationError("From 1 to 3,600 seconds")
        return value

    def clean_max_trace_chars(self) -> int:
        value = self.cleaned_data["max_trace_chars"]
        if not MIN_BUDGET <= value <= 2_000_000:
            raise forms.ValidationError(f"From {MIN_BUDGET:,} to 2,000,000 characters")
        return value

    def clean_window_overlap_steps(self) -> int:
        value = self.cleaned_data["window_overlap_steps"]
        if not 0 <= value <= MAX_OVERLAP:
            raise forms.ValidationError(f"From 0 to {MAX_OVERLAP} steps")
        return value


class StartRunForm(forms.Form):
    batch = forms.CharField(max_length=200)
    limit = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False)  # the column is 32-bit
    model = forms.CharField(max_length=200, required=False, help_text="Empty: the model in the settings")
    view = forms.CharField(
        max_length=200, required=False, help_text="A saved view: its traces, not the batch's"
    )
