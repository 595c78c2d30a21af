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


def test_production_settings_pass_the_deploy_check(tmp_path):
    import os
    import subprocess
    import sys

    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL", "REDIS_URL"}
        },
        "DEBUG": "false",
        "SECRET_KEY": "x" * 60 + "-production-secret-from-the-environment",
        "ALLOWED_HOSTS": "annotate.example.org",
        "SECURE_SSL_REDIRECT": "true",
        "SECURE_HSTS_SECONDS": "31536000",
        "VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
