"""LLM rater settings verbs: the endpoint, the stored key, the versioned prompt, the rater user.

The owner checks happen in the callers (annotator.access, MANAGE_ROLES); these functions change state.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Max

from annotator.llm.prompt import DEFAULT_INSTRUCTIONS
from annotator.llm.secrets import encrypt
from annotator.models import LLMConfig, Membership, Project, PromptTemplate, Role
from annotator.raters import get_llm_rater

log = logging.getLogger(__name__)

MAX_KEY_LENGTH = 500
MAX_INSTRUCTIONS = 20_000


class LLMSettingsError(ValueError):
    """Shown to the owner as it is."""


def get_config(project: Project) -> LLMConfig:
    """The project's settings, created with the defaults on first use (a local Ollama, no model yet)."""
    config, _ = LLMConfig.objects.get_or_create(project=project)
    return config


def current_prompt(project: Project) -> PromptTemplate:
    """The newest prompt version; version 1 (the default instructions) is created on first use."""
    template = PromptTemplate.objects.filter(project=project).order_by("-number").first()
    if template is None:
        template, _ = PromptTemplate.objects.get_or_create(
            project=project, number=1, defaults={"instructions": DEFAULT_INSTRUCTIONS}
        )
    return template


def do_save_prompt(project: Project, instructions: str, *, actor=None) -> tuple[PromptTemplate, bool]:
    """Store edited instructions as a new version (returns it and True), or the current one and False when
    nothing changed. Old versions stay: runs point at the version they used."""
    text = (instructions or "").replace("\r\n", "\n").strip()
    if not text:
        raise LLMSettingsError("The instructions cannot be empty.")
    if len(text) > MAX_INSTRUCTIONS:
        raise LLMSettingsError(f"Keep the instructions under {MAX_INSTRUCTIONS:,} characters.")
    with transaction.atomic():
        # Serialise concurrent edits on the project row so two saves cannot take the same number.
        Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
        current = current_prompt(project)
        if current.instructions.strip() == text:
            return current, False
        number = (PromptTemplate.objects.filter(project=project).aggregate(n=Max("number"))["n"] or 0) + 1
        template = PromptTemplate.objects.create(
            project=project, number=number, instructions=text, created_by=actor
        )
    log.info("project %s: prompt version %d saved by %s", project.slug, number, actor)
    return template, True


def do_save_config(config: LLMConfig, *, actor=None) -> bool:
    """Save edited endpoint settings (a validated form's instance, base URL already checked by
    annotator.llm.urlguard). A changed base URL forgets the stored key: a key entered for one server must
    never be sent to another. Returns True when a stored key was forgotten, so the page can say so."""
    with transaction.atomic():
        current = LLMConfig.objects.select_for_update().get(pk=config.pk)
        forgot = current.base_url != config.base_url and bool(current.api_key_encrypted)
        # The stored key is never a form field: keep what the row holds now (or nothing, when forgotten).
        config.api_key_encrypted = "" if forgot else current.api_key_encrypted
        config.updated_by = actor
        config.save()
    if forgot:
        log.info(
            "project %s: base URL changed by %s; the stored API key was forgotten", config.project_id, actor
        )
    return forgot


def do_store_key(project: Project, key: str, *, actor=None) -> None:
    """Encrypt and store an API key (it then takes precedence over the environment variable)."""
    key = (key or "").strip()
    if not key:
        raise LLMSettingsError("Paste the API key to store it.")
    if len(key) > MAX_KEY_LENGTH or any(ch.isspace() for ch in key):
        raise LLMSettingsError("That does not look like an API key (no spaces, at most 500 characters).")
    config = get_config(project)
    LLMConfig.objects.filter(pk=config.pk).update(api_key_encrypted=encrypt(key), updated_by=actor)
    log.info("project %s: an API key was stored by %s", project.slug, actor)


def do_forget_key(project: Project, *, actor=None) -> None:
    LLMConfig.objects.filter(project=project).update(api_key_encrypted="", updated_by=actor)
    log.info("project %s: the stored API key was removed by %s", project.slug, actor)


def llm_rater(project: Project, model: str):
    """The rater user for `model` (``llm:<model>``, kind llm): inactive, no usable password, and never a
    candidate for human work (see annotator.raters). It becomes an annotator member of the project (so
    agreement reports list it) with its first stored label: `add_llm_member`."""
    user = get_llm_rater(model)
    return user


def add_llm_member(project_id: int, user) -> None:
    Membership.objects.get_or_create(project_id=project_id, user=user, role=Role.ANNOTATOR)
