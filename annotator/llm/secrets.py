"""Encrypt the one secret we store (an LLM endpoint's API key) with Fernet.

The Fernet key is derived with HKDF-SHA256 from FIELD_ENCRYPTION_KEY when it is set, else from SECRET_KEY.
A dedicated FIELD_ENCRYPTION_KEY lets SECRET_KEY be rotated without losing stored keys; without it, rotating
SECRET_KEY makes stored keys unreadable, which `decrypt` reports as such (the owner enters the key again).
"""

from __future__ import annotations

import base64
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
    return _fernet(getattr(settings, "FIELD_ENCRYPTION_KEY", "") or settings.SECRET_KEY)


def encrypt(plain: str) -> str:
    return _current().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "The stored API key cannot be decrypted (FIELD_ENCRYPTION_KEY or SECRET_KEY changed?); "
            "enter the key again on the project's LLM settings page."
        ) from None
