"""Module-scoped worlds for the signature tests.

Loading the built-in taxonomies costs more than a second, and nearly every test here only reads a world
it does not change. So each test module builds its world once inside a transaction that is rolled back
when the module ends; tests that touch the database (a client's session) run in a savepoint inside it.

Modules using these worlds must carry ``pytestmark = pytest.mark.django_db``: pytest-django only creates
the test database when a collected test asks for it, and ``shared_db`` refuses to run anywhere else.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import transaction

from tests.signatures.world import build_annotation_world, build_gold_world


@pytest.fixture(autouse=True)
def _no_stored_figures():
    """Figures are stored in the cache (annotator.services.signatures.report); a test starts without."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(scope="module")
def shared_db(django_db_setup, django_db_blocker):
    from django.db import connection

    with django_db_blocker.unblock():
        name = str(connection.settings_dict["NAME"])
        if not ("test" in name or "memory" in name):
            pytest.fail(f"shared_db would write to {name}: mark the module with pytest.mark.django_db")
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


def make_people(*, blind: bool = True) -> SimpleNamespace:
    """The personas of tests/conftest.py (plus a viewer) in a MAST project. Passwords are hashed with MD5
    here: six PBKDF2 hashes would cost more than the rest of the world put together."""
    from taxonomy.services import load_builtin_taxonomies
    from tests.factories import ProjectFactory, UserFactory, add_member

    versions = {version.taxonomy.slug: version for version, _ in load_builtin_taxonomies()}
    roles = {
        "owner": ("olivia-owner", "owner"),
        "annotator_a": ("ana-annotator", "annotator"),
        "annotator_b": ("ben-annotator", "annotator"),
        "adjudicator": ("ada-adjudicator", "adjudicator"),
        "viewer": ("vic-viewer", "viewer"),
        "outsider": ("oscar-outsider", None),
    }
    people = SimpleNamespace(**{key: UserFactory(username=name) for key, (name, _) in roles.items()})
    project = ProjectFactory(
        taxonomy_version=versions["mast"], slug="demo-project", name="Demo project", blind=blind
    )
    for key, (_, role) in roles.items():
        if role:
            add_member(project, getattr(people, key), role)
    people.project = project
    return people


@pytest.fixture(scope="module")
def gold_people(shared_db):
    """The personas with the 80-trace gold world of tests/signatures/world.py."""
    people = make_people()
    build_gold_world(people.project)
    return people


@pytest.fixture(scope="module")
def annotation_people(shared_db):
    """The personas with the four-trace annotation world of tests/signatures/world.py."""
    people = make_people()
    build_annotation_world(people.project, people.annotator_a, people.annotator_b)
    return people
