"""Where an LLM endpoint's API key may come from: the stored, encrypted value, or an environment variable
that the administrator listed in LLM_KEY_ENVS. Never an arbitrary variable named by a project owner: that
would let an owner send SECRET_KEY or DATABASE_URL as a bearer token to a server of their choosing.

The Fernet key for stored keys is derived with HKDF-SHA256 from FIELD_ENCRYPTION_KEY (required in production;
settings.py derives a fallback from SECRET_KEY only when DEBUG is on). A dedicated key lets SECRET_KEY be
rotated without losing stored keys; when the material changes anyway, `decrypt` reports stored keys as
unreadable (the owner enters the key again).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

_SALT = b"trace-annotator/field-encryption"
_INFO = b"llm-api-key/v1"


class SecretUnreadable(Exception):
    """The stored token cannot be decrypted with the current key material."""


@lru_cache(maxsize=4)
def _fernet(material: str) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=_INFO).derive(material.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def _current() -> Fernet:
    return _fernet(settings.FIELD_ENCRYPTION_KEY)


def encrypt(plain: str) -> str:
    return _current().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "The stored API key cannot be decrypted (FIELD_ENCRYPTION_KEY changed?); "
            "enter the key again on the project's LLM settings page."
        ) from None


@dataclass(frozen=True)
class KeyEnv:
    """One entry of LLM_KEY_ENVS: a variable name, optionally bound to base-URL prefixes
    (``OPENAI_API_KEY=https://api.openai.com/``): its value is then sent only to those URLs."""

    name: str
    prefixes: tuple[str, ...] = ()

    def serves(self, base_url: str) -> bool:
        from annotator.llm.urlguard import is_allowed_prefix

        return not self.prefixes or is_allowed_prefix(base_url, self.prefixes)


def allowed_key_envs() -> dict[str, KeyEnv]:
    """The administrator's LLM_KEY_ENVS, by name ("NAME" or "NAME=prefix|prefix", comma-separated)."""
    entries: dict[str, KeyEnv] = {}
    for item in settings.LLM_KEY_ENVS:
        name, _, prefixes = item.partition("=")
        name = name.strip()
        if name:
            entries[name] = KeyEnv(name, tuple(p.strip() for p in prefixes.split("|") if p.strip()))
    return entries


def env_key(name: str, base_url: str) -> str:
    """The value of variable `name` if the administrator allows it for `base_url`, else ""."""
    entry = allowed_key_envs().get(name)
    if entry is None or not entry.serves(base_url):
        return ""
    return os.environ.get(name, "")


def env_key_source(name: str, base_url: str) -> str:
    """What the settings page says about a key variable. Whether a variable is set is told only for the ones
    the administrator listed: for any other name the page must not become a probe of the environment."""
    entry = allowed_key_envs().get(name)
    if entry is None:
        return f"none: ${name} is not one of the key variables the administrator allows (LLM_KEY_ENVS)"
    if not entry.serves(base_url):
        return f"none: the administrator allows ${name} only for {', '.join(entry.prefixes)}"
    found = "set" if os.environ.get(name) else "not set on the server"
    return f"from ${name} ({found})"
