"""Settings come from the environment and a typo fails loudly instead of becoming a silent default."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from annotator.env import envbool, envint, envlist


def test_envbool_reads_the_usual_spellings(monkeypatch):
    monkeypatch.setenv("FLAG", "yes")
    assert envbool("FLAG") is True
    monkeypatch.setenv("FLAG", "0")
    assert envbool("FLAG", True) is False


def test_envbool_rejects_a_typo(monkeypatch):
    monkeypatch.setenv("FLAG", "ture")
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        envbool("FLAG")


def test_envint_rejects_a_non_number(monkeypatch):
    monkeypatch.setenv("N", "ten")
    with pytest.raises(ImproperlyConfigured, match="N='ten'"):
        envint("N", 1)


def test_envlist_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,")
    assert envlist("HOSTS", []) == ["a.example", "b.example"]


PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "x" * 60 + "-production-secret-from-the-environment",
    "FIELD_ENCRYPTION_KEY": "y" * 60 + "-field-encryption-key",
    "ALLOWED_HOSTS": "annotate.example.org",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
}


def manage(tmp_path, *args: str, **env: str):
    """Run manage.py in a fresh process with the app's own settings and exactly `env` on top of a clean
    environment (no DEBUG, no secrets inherited from the test run)."""
    import os
    import subprocess
    import sys

    dropped = {"DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY"}
    dropped |= {"FIELD_ENCRYPTION_KEY", "DJANGO_SETTINGS_MODULE"}
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        capture_output=True,
        text=True,
        env={**base, "VAR_DIR": str(tmp_path), **env},
    )


def test_production_settings_pass_the_deploy_check(tmp_path):
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr


def test_debug_is_off_unless_set_and_then_a_secret_key_is_required(tmp_path):
    """Issue 11, point 10: a bare start used to serve debug pages signed with a public fallback key."""
    result = manage(tmp_path, "check")
    assert result.returncode != 0 and "SECRET_KEY must be set when DEBUG is off" in result.stderr
    script = "from django.conf import settings; print(settings.DEBUG)"
    unset = {k: v for k, v in PRODUCTION.items() if k != "DEBUG"}
    shown = manage(tmp_path, "shell", "-c", script, **unset)
    assert shown.returncode == 0 and shown.stdout.strip().splitlines()[-1] == "False", shown.stderr
    assert manage(tmp_path, "check", DEBUG="true").returncode == 0  # the local demo needs nothing


def test_production_needs_its_own_field_encryption_key(tmp_path):
    without = {k: v for k, v in PRODUCTION.items() if k != "FIELD_ENCRYPTION_KEY"}
    result = manage(tmp_path, "check", **without)
    assert result.returncode != 0 and "FIELD_ENCRYPTION_KEY must be set" in result.stderr
    same = manage(tmp_path, "check", **{**PRODUCTION, "FIELD_ENCRYPTION_KEY": PRODUCTION["SECRET_KEY"]})
    assert same.returncode != 0 and "differ from SECRET_KEY" in same.stderr


def test_a_mistyped_token_rate_fails_at_start(tmp_path):
    result = manage(tmp_path, "check", DEBUG="true", API_TOKEN_RATE="10 per minute")
    assert result.returncode != 0 and "API_TOKEN_RATE='10 per minute'" in result.stderr
