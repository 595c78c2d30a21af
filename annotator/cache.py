"""Django's Redis cache, made optional: when Redis is down every call degrades to "no cache".

The cache only holds things that can be recomputed or lost (viewer pages, import progress, debounce and
lock keys, a typed Hub token for a few minutes). Without this wrapper one unreachable Redis turned the
annotate page into a 500 and every submit into a 19-second wait. Here a failing call is logged once per
outage, answers its "miss" value at once, and the cache is bypassed for BYPASS_SECONDS before Redis is
tried again, so a request pays at most one short socket timeout (CACHE_TIMEOUT_SECONDS).

`add` answers True while bypassed: its callers use it as a debounce or a lock around idempotent work, and
doing that work twice is better than never doing it. `add_to_set` answers False while bypassed: its
caller then does the work itself instead of leaving it in a set nobody can read.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

BYPASS_SECONDS = 5.0
_ERRORS = (RedisError, OSError)


class ResilientRedisCache(RedisCache):
    _down_until = 0.0

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, operation: str, error: BaseException) -> None:
        if self._available():
            log.warning("cache unavailable (%s: %s); continuing without it", operation, error)
        self._down_until = time.monotonic() + BYPASS_SECONDS

    def _guarded(self, operation: str, fallback: Any, call, *args: Any, **kwargs: Any) -> Any:
        if not self._available():
            return fallback
        try:
            return call(*args, **kwargs)
        except _ERRORS as error:
            self._failed(operation, error)
            return fallback

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded("add", True, super().add, key, value, timeout, version)

    def get(self, key, default=None, version=None):
        return self._guarded("get", default, super().get, key, default, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded("set", None, super().set, key, value, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded("touch", False, super().touch, key, timeout, version)

    def delete(self, key, version=None):
        return self._guarded("delete", False, super().delete, key, version)

    def get_many(self, keys, version=None):
        return self._guarded("get_many", {}, super().get_many, keys, version)

    def has_key(self, key, version=None):
        return self._guarded("has_key", False, super().has_key, key, version)

    def incr(self, key, delta=1, version=None):
        # A missing key raises ValueError, as for any backend; an outage counts as missing.
        if not self._available():
            raise ValueError(f"Key '{key}' not found (cache unavailable)")
        try:
            return super().incr(key, delta, version)
        except _ERRORS as error:
            self._failed("incr", error)
            raise ValueError(f"Key '{key}' not found (cache unavailable)") from error

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded("set_many", list(data), super().set_many, data, timeout, version)

    def delete_many(self, keys, version=None):
        return self._guarded("delete_many", None, super().delete_many, keys, version)

    def clear(self):
        return self._guarded("clear", False, super().clear)

    # Sets, for work collected from many requests and taken by one task (annotator.services.followups).

    def add_to_set(self, key: str, members: list[int], timeout: int) -> bool:
        """Add `members` to the set `key`, kept `timeout` seconds after its last addition. False when Redis
        is unreachable: the caller then sends the work itself."""

        def call() -> bool:
            full = self.make_and_validate_key(key)
            pipe = self._cache.get_client(full, write=True).pipeline()
            pipe.sadd(full, *members)
            pipe.expire(full, timeout)
            pipe.execute()
            return True

        return self._guarded("add_to_set", False, call)

    def take_set(self, key: str) -> list[int]:
        """Every member of the set `key`, removed in the same step (MULTI/EXEC: a member added meanwhile is
        either taken now or left for the next take). [] when Redis is unreachable."""

        def call() -> list[int]:
            full = self.make_and_validate_key(key)
            pipe = self._cache.get_client(full, write=True).pipeline()
            pipe.smembers(full)
            pipe.delete(full)
            members, _ = pipe.execute()
            return sorted(int(member) for member in members)

        return self._guarded("take_set", [], call)
