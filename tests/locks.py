"""A row held by another transaction, for tests of claims that must pass a locked row by (PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def row_locked_elsewhere(model, pk: int) -> Iterator[None]:
    """Inside the block, another connection holds `SELECT ... FOR UPDATE` on the row `pk` of `model`, as a
    concurrent request in the middle of its claim would; the lock is released when the block ends."""
    holding, release, errors = threading.Event(), threading.Event(), []

    def rival() -> None:
        try:
            with transaction.atomic():
                model.objects.select_for_update().filter(pk=pk).first()
                holding.set()
                release.wait(10)
        except Exception as error:  # surfaced by the assertion below
            errors.append(repr(error))
            holding.set()
        finally:
            connection.close()

    thread = threading.Thread(target=rival)
    thread.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        release.set()
        thread.join()
    assert errors == []
