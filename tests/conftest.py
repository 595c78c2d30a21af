"""Personas (owner, annotator, adjudicator, outsider), the built-in taxonomies, and the CI guard."""

from __future__ import annotations

import pytest

from tests.services import IN_CI


def pytest_configure(config):
    # Personas' passwords are hashed on creation; PBKDF2 costs ~0.2 s a user, MD5 nothing. Tests only.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_sessionstart(session):
    # CI promises PostgreSQL: running the suite on SQLite there would hide real-database bugs.
    if IN_CI:
        from django.conf import settings

        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            pytest.exit(
                f"CI=true but DATABASE_URL does not select PostgreSQL (engine: {engine})", returncode=3
            )


@pytest.fixture(autouse=True)
def _eager_celery_outside_integration(request):
    """Tests hold their data in a transaction no worker can see, so tasks must run inline even when
    REDIS_URL is set (CI): only tests marked `integration` talk to the real worker."""
    if request.node.get_closest_marker("integration"):
        yield
        return
    from annotator.services.enqueue import celery_app

    app = celery_app()

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


@pytest.fixture
def taxonomies(db):
    from taxonomy.services import load_builtin_taxonomies

    return {version.taxonomy.slug: version for version, _ in load_builtin_taxonomies()}


@pytest.fixture
def mast(taxonomies):
    return taxonomies["mast"]


@pytest.fixture
def owner(db):
    from tests.factories import UserFactory

    return UserFactory(username="olivia-owner")


@pytest.fixture
def annotator_a(db):
    from tests.factories import UserFactory

    return UserFactory(username="ana-annotator")


@pytest.fixture
def annotator_b(db):
    from tests.factories import UserFactory

    return UserFactory(username="ben-annotator")


@pytest.fixture
def adjudicator(db):
    from tests.factories import UserFactory

    return UserFactory(username="ada-adjudicator")


@pytest.fixture
def outsider(db):
    from tests.factories import UserFactory

    return UserFactory(username="oscar-outsider")


@pytest.fixture
def project(db, mast, owner, annotator_a, annotator_b, adjudicator):
    from tests.factories import ProjectFactory, add_member

    project = ProjectFactory(taxonomy_version=mast, slug="demo-project", name="Demo project")
    add_member(project, owner, "owner")
    add_member(project, annotator_a, "annotator")
    add_member(project, annotator_b, "annotator")
    add_member(project, adjudicator, "adjudicator")
    return project


@pytest.fixture(autouse=True)
def _a_fresh_local_cache():
    """Without Redis the cache lives in this process, and what it counts is keyed by row ids that SQLite
    hands out again after each test's rollback (an endpoint's rate window is `llm-rpm:cfg1:MINUTE`): one
    test's hundreds of model requests must not fill the next test's window. Redis runs (PostgreSQL, whose
    ids never repeat) keep their cache."""
    yield
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()


@pytest.fixture(autouse=True)
def _api_answers_match_the_schema(monkeypatch):
    """Every API response any test produces must match the published OpenAPI schema (tests/api/openapi.py)."""
    from tests.api.openapi import install

    install(monkeypatch)
