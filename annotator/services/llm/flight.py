"""The loop every model run flies: up to `concurrency` requests in a thread pool, each answer collected on
the run's own thread as it arrives. The LLM rater's runs (annotator.services.llm.process) and discovery and
gate runs (annotator.discovery.process) are subclasses that say what to send and what to do with an answer;
the loop itself exists once.

What the loop keeps, for every kind of run:

- before each request it asks `may_send()` (the run is still running, under its token cap, in its time):
  a stop, a cap or a deadline stops sending at once, and what is already on the wire is still collected;
- `prepare(item)` runs on the calling thread (the ORM lives there) and hands back the call the pool runs
  (HTTP and parsing only), or None when the item needs no request (recorded already, skipped);
- it waits for the first answer with a WAKE_SECONDS timeout, so a run whose requests are all slow still
  touches its lock (`lock_key`, refreshed for `lock_seconds`) and notices a stop while it waits;
- UNAVAILABLE_LIMIT consecutive answers (in the order they arrive) that found the endpoint unavailable
  are the subclass's cue to fail the run (`count_unavailable`), instead of failing item after item while
  the server is down;
- on any BaseException (the worker dies, as if killed) every client is cancelled so nothing more leaves;
  what was in flight is lost and stays pending for the next claim. The pool is always shut down.

The pool's threads are named `thread_name`-N (`llm-run-7_0`, `discovery-3_2`): the browser tests find a
run's workers by these names.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Generic, TypeVar

from django.core.cache import cache

from annotator.llm.client import ChatClient

# How often the run's thread wakes while every request is still out: to keep its lock and notice a stop.
WAKE_SECONDS = 5.0
# Consecutive answers that found the endpoint unavailable before a run gives up.
UNAVAILABLE_LIMIT = 3
TOKEN_CAP_REACHED = "token cap reached"

T = TypeVar("T")


class Flight(ABC, Generic[T]):
    """One pass of a run over its items. Subclasses give `may_send`, `prepare` and `collect`; `sent` and
    `landed` are optional. `fly` returns True when every item was handled and every answer collected,
    False when sending stopped first (stopped, capped, failed, out of time)."""

    wake_seconds = WAKE_SECONDS

    def __init__(
        self,
        *,
        concurrency: int,
        thread_name: str,
        clients: Sequence[ChatClient],
        lock_key: str,
        lock_seconds: int,
    ) -> None:
        self.concurrency = max(1, int(concurrency))
        self.thread_name = thread_name
        self.clients = list(clients)
        self.lock_key, self.lock_seconds = lock_key, lock_seconds
        self.flying: dict[Future, T] = {}
        self.sending = True  # False once the run must stop sending
        self.unavailable = 0

    # --- what a subclass says ---

    @abstractmethod
    def may_send(self) -> bool:
        """Whether one more request may go (reads the run's row; stops sending when it may not)."""

    @abstractmethod
    def prepare(self, item: T) -> Callable[[], Any] | None:
        """On the calling thread: the call the pool runs for `item`, or None when it needs no request."""

    @abstractmethod
    def collect(self, item: T, future: Future) -> None:
        """On the calling thread: record `item`'s answer (`future` is done; it may hold an exception)."""

    def sent(self) -> None:
        """After a round of sending (the requests in flight are `len(self.flying)`)."""

    def landed(self) -> None:
        """After the pool has shut down, whatever happened."""

    # --- what the loop gives ---

    def fly(self, items: Iterable[T]) -> bool:
        items = iter(items)
        exhausted = False
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix=self.thread_name)
        try:
            while True:
                sent = False
                while self.sending and not exhausted and len(self.flying) < self.concurrency:
                    if not self.may_send():
                        break
                    item = next(items, None)
                    if item is None:
                        exhausted = True
                        break
                    call = self.prepare(item)
                    if call is not None:
                        self.flying[pool.submit(call)] = item
                        sent = True
                if sent:
                    self.sent()
                if not self.flying:
                    break
                done, _ = wait(self.flying, timeout=self.wake_seconds, return_when=FIRST_COMPLETED)
                self.touch()
                for future in done:
                    self.collect(self.flying.pop(future), future)
                if self.sending and not done:
                    self.may_send()  # nothing came back for a while: notice a stop without waiting
        except BaseException:
            # This worker dies here, as if killed: what it had in flight is lost, and nothing more is sent.
            self.cancel()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self.landed()
        return exhausted and self.sending

    def touch(self) -> None:
        """Keep the run's lock while it works (it expires if the worker dies)."""
        cache.touch(self.lock_key, self.lock_seconds)

    def stop_sending(self, *, cancel: bool = False) -> None:
        """Send nothing more; `cancel`: also end the clients' waits and attempts not yet sent."""
        self.sending = False
        if cancel:
            self.cancel()

    def cancel(self) -> None:
        self.sending = False
        for client in self.clients:
            client.cancel()

    def count_unavailable(self, unavailable: bool) -> bool:
        """Count an answer: True once UNAVAILABLE_LIMIT answers in a row found the endpoint unavailable."""
        self.unavailable = self.unavailable + 1 if unavailable else 0
        return self.unavailable >= UNAVAILABLE_LIMIT
