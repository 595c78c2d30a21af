"""Test settings: the app's settings as a local demo has them (DEBUG on, so no secrets are needed and static
files need no collectstatic). pytest-django turns DEBUG off while tests run; production defaults (DEBUG off,
required secrets) are tested in tests/test_settings_env.py by starting Django in a subprocess."""

import os

os.environ.setdefault("DEBUG", "true")

from annotator.settings import *  # noqa: F403
