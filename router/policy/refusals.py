"""The rate of a principal's refused requests (`router.quotas.*.refused_per_minute`).

A request refused before `meter` (an unknown tool name, arguments that break the schema, a
denied or held tool) spends no quota, yet the router resolves it, validates it and writes
its line to the audit trail. So refusals spend a token bucket of their own, per principal:
while it is empty every request of that principal is refused as over quota, before any of
that work, and only the first refusal of each such run is written to the trail, so a
principal's refusals write at most about twice its rate of lines a minute. Requests that
pass spend nothing here. The limit applies without any `router.quotas` section
(`DEFAULT_REFUSED_PER_MINUTE`); each replica counts its own, and the table forgets the
principal least recently seen past `MAX_PRINCIPALS`, as `QuotaBook` does.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from router.config.identity import DEFAULT_PROFILE
from router.config.quotas import DEFAULT_REFUSED_PER_MINUTE, Quota

MAX_PRINCIPALS = 10_000
QUOTA = "refused_per_minute"


def refused_limit(quotas: Mapping[str, Quota], profiles: tuple[str, ...] | None) -> int | None:
    """A caller's `refused_per_minute`: the most generous of its matching profiles' entries,
    else `default`'s, else `DEFAULT_REFUSED_PER_MINUTE`; None: unlimited."""
    matching = [quotas[name] for name in profiles or () if name in quotas]
    if not matching and DEFAULT_PROFILE in quotas:
        matching = [quotas[DEFAULT_PROFILE]]
    if not matching:
        return DEFAULT_REFUSED_PER_MINUTE
    limits = [quota.refused_per_minute for quota in matching]
    return None if None in limits else max(limit for limit in limits if limit is not None)


@dataclass(frozen=True, slots=True)
class OverRate:
    """A request refused because its principal is past `limit` refusals a minute; `first`:
    the first of a run of such refusals (the one the trail records)."""

    limit: int
    retry_after: float
    first: bool


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float
    reported: bool = False


class RefusalRate:
    """Every principal's bucket of refusals, thread-safe; `clock` is monotonic seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def over(self, principal: str, per_minute: int) -> OverRate | None:
        """Whether `principal` is past its refusals now (a request it sends is refused)."""
        with self._lock:
            bucket = self._refilled(principal, per_minute)
            if bucket.tokens >= 1.0:
                bucket.reported = False
                return None
            first, bucket.reported = not bucket.reported, True
            return OverRate(per_minute, (1.0 - bucket.tokens) * 60 / per_minute, first)

    def refused(self, principal: str, per_minute: int) -> None:
        """Spend one of `principal`'s refusals."""
        with self._lock:
            bucket = self._refilled(principal, per_minute)
            bucket.tokens = max(0.0, bucket.tokens - 1.0)

    def _refilled(self, principal: str, per_minute: int) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.pop(principal, None) or _Bucket(float(per_minute), now)
        self._buckets[principal] = bucket  # the most recently seen last
        while len(self._buckets) > MAX_PRINCIPALS:
            self._buckets.popitem(last=False)
        elapsed = max(0.0, now - bucket.stamp)
        bucket.tokens = min(float(per_minute), bucket.tokens + elapsed * per_minute / 60)
        bucket.stamp = now
        return bucket
