"""The one door to background work: services send a task by its name and never import `annotator.tasks`.

Tasks import services (to do the work); services only know task names. That keeps the dependency one way
(Zulip's workers import actions, never the reverse) and leaves no import inside a function to break a cycle.

When the broker cannot take the message (Redis down) the caller decides what the user sees: `on_failure`
receives the error, typically to mark the job failed with a reason shown on its page. The publish itself
gives up fast (a few short retries, see CELERY_BROKER_* in settings), so a request never hangs on it. Work
that must not be lost either way (the adjudication check after a submit, queued jobs) is also picked up by
the periodic `annotator.jobs.reconcile` task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

from django.db import transaction

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger(__name__)


@cache
def celery_app() -> Celery:
    """The Celery app with the project's tasks registered, loaded on first use.

    Not at start-up: Celery, kombu and redis are a tenth of what a management command imports, and most
    commands (an import without --project, an export) never send a task. Celery first, so the tasks'
    `shared_task` bind to this app; the worker and beat load it themselves (`celery -A annotator.celery`)."""
    app = import_module("annotator.celery").app
    import_module("annotator.tasks")
    return app


@cache
def broker_errors() -> tuple[type[BaseException], ...]:
    """What a broker that is down or unreachable raises from apply_async (kombu wraps most of them)."""
    broker_error = import_module("kombu.exceptions").OperationalError
    redis_error = import_module("redis.exceptions").RedisError
    return (broker_error, redis_error, OSError)


ENQUEUE_FAILED = "Could not reach the task queue (Redis) to start this job. Try again in a moment."


def is_eager() -> bool:
    """True when tasks run inline (no REDIS_URL): the laptop default."""
    return bool(celery_app().conf.task_always_eager)


def enqueue(
    task_name: str,
    *args: Any,
    countdown: float | None = None,
    after_commit: bool = True,
    on_failure: Callable[[BaseException], None] | None = None,
) -> None:
    """Send `task_name(*args)` to the worker.

    `after_commit` (the default) waits until the caller's transaction commits, because a worker reads
    through its own connection and must find the rows. Eager (inline) tasks run at once or after commit
    the same way, and their own errors propagate: only broker errors go to `on_failure`."""
    task = celery_app().tasks[task_name]
    options = {} if countdown is None else {"countdown": countdown}

    def send() -> None:
        if is_eager():
            task.apply_async(args, **options)
            return
        try:
            task.apply_async(args, **options)
        except broker_errors() as error:
            log.warning("could not enqueue %s%r: %s", task_name, tuple(args), error)
            if on_failure is not None:
                on_failure(error)

    if after_commit:
        transaction.on_commit(send)
    else:
        send()
