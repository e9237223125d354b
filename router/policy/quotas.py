"""Quotas per principal (`router.quotas`): token buckets for calls a minute and counters for
calls in flight, one set per principal (and per principal and upstream).

The limits come from the config in force at each call (`limits_for`: the caller's matching
profiles, the most generous of them per limit, else `default`), so a reload changes them at
once; the counts live here, across reloads. Counts are this process's: each replica holds
its own (with N replicas behind a balancer, a principal gets up to N times the allowance).
The table is bounded: past `MAX_PRINCIPALS`, the principal least recently seen is
forgotten (its bucket refills in full, which only ever favours the caller).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from router.config.identity import DEFAULT_PROFILE
from router.config.quotas import Quota

MAX_PRINCIPALS = 10_000


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits that apply to one call: router-wide and for its upstream."""

    calls_per_minute: int | None = None
    concurrent_calls: int | None = None
    upstream_calls_per_minute: int | None = None
    upstream_concurrent_calls: int | None = None

    @property
    def unlimited(self) -> bool:
        return all(
            value is None
            for value in (
                self.calls_per_minute,
                self.concurrent_calls,
                self.upstream_calls_per_minute,
                self.upstream_concurrent_calls,
            )
        )


def _most(values: list[int | None]) -> int | None:
    """The most generous of the limits: unset (unlimited) beats any number."""
    if not values or any(value is None for value in values):
        return None
    return max(value for value in values if value is not None)


def limits_for(
    quotas: Mapping[str, Quota], profiles: tuple[str, ...] | None, server: str
) -> Limits:
    """The limits of a caller whose matching profiles are `profiles` (None: no profiles are
    configured), for a call to `server`'s tool."""
    if not quotas:
        return Limits()
    matching = [quotas[name] for name in profiles or () if name in quotas]
    if not matching:
        matching = [quotas[DEFAULT_PROFILE]] if DEFAULT_PROFILE in quotas else []
    if not matching:
        return Limits()
    upstream = [q.upstreams.get(server) for q in matching]
    return Limits(
        calls_per_minute=_most([q.calls_per_minute for q in matching]),
        concurrent_calls=_most([q.concurrent_calls for q in matching]),
        upstream_calls_per_minute=_most([u.calls_per_minute if u else None for u in upstream]),
        upstream_concurrent_calls=_most([u.concurrent_calls if u else None for u in upstream]),
    )


@dataclass(frozen=True, slots=True)
class OverQuota:
    """Which quota a call is over, its limit, and in how many seconds it allows one more."""

    quota: str
    limit: int
    retry_after: float

    def message(self) -> str:
        return (
            f"over quota: {self.quota} is {self.limit} for this principal "
            f"(router.quotas); retry in {max(1, round(self.retry_after))} s"
        )


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


@dataclass(slots=True)
class _Usage:
    buckets: dict[str, _Bucket] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)


class QuotaBook:
    """The counts of every principal, thread-safe; `clock` is monotonic seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._usage: OrderedDict[str, _Usage] = OrderedDict()

    def admit(self, principal: str, server: str, limits: Limits) -> Callable[[], None] | OverQuota:
        """Count one call of `principal` to `server`'s tool, or say which quota it is over
        (nothing is counted then). Admitted, the answer releases its place in flight: call
        it once the call ends."""
        if limits.unlimited:
            return _nothing
        scopes = (
            ("*", "calls_per_minute", limits.calls_per_minute, limits.concurrent_calls),
            (
                server,
                f"{server}.calls_per_minute",
                limits.upstream_calls_per_minute,
                limits.upstream_concurrent_calls,
            ),
        )
        now = self._clock()
        with self._lock:
            usage = self._usage.pop(principal, None) or _Usage()
            self._usage[principal] = usage  # the most recently seen last
            while len(self._usage) > MAX_PRINCIPALS:
                self._usage.popitem(last=False)
            for scope, name, per_minute, concurrent in scopes:
                if concurrent is not None and usage.in_flight.get(scope, 0) >= concurrent:
                    label = "concurrent_calls" if scope == "*" else f"{scope}.concurrent_calls"
                    return OverQuota(label, concurrent, 1.0)
                if per_minute is not None:
                    bucket = self._refilled(usage, scope, per_minute, now)
                    if bucket.tokens < 1.0:
                        return OverQuota(name, per_minute, (1.0 - bucket.tokens) * 60 / per_minute)
            for scope, _, per_minute, concurrent in scopes:
                if per_minute is not None:
                    usage.buckets[scope].tokens -= 1.0
                if concurrent is not None:
                    usage.in_flight[scope] = usage.in_flight.get(scope, 0) + 1
        counted = [scope for scope, _, _, concurrent in scopes if concurrent is not None]
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            with self._lock:
                for scope in counted:
                    left = usage.in_flight.get(scope, 0) - 1
                    if left > 0:
                        usage.in_flight[scope] = left
                    else:
                        usage.in_flight.pop(scope, None)

        return release

    @staticmethod
    def _refilled(usage: _Usage, scope: str, per_minute: int, now: float) -> _Bucket:
        bucket = usage.buckets.get(scope)
        if bucket is None:
            bucket = usage.buckets[scope] = _Bucket(float(per_minute), now)
        bucket.tokens = min(
            float(per_minute), bucket.tokens + (now - bucket.stamp) * per_minute / 60
        )
        bucket.stamp = now
        return bucket


def _nothing() -> None:
    return None
