"""Quotas per principal (`router.quotas`): token buckets for calls a minute and counters for
calls in flight, one set per principal (and per principal and upstream).

The limits come from the config in force at each call (`limits_for`: the caller's matching
profiles, the most generous of them per limit, else `default`), so a reload changes them at
once; the counts live here, across reloads. With a shared store, `calls_per_minute` is
counted in its table by every replica alike (`router.store.quota_buckets`); without one,
and always for calls in flight, each replica counts its own (with N replicas behind a
balancer, a principal gets up to N times that allowance).
The table is bounded: past `MAX_PRINCIPALS`, the principal least recently seen is
forgotten (its bucket refills in full, which only ever favours the caller).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from router.config.identity import DEFAULT_PROFILE
from router.config.quotas import Quota
from router.core.errors import StoreError
from router.policy.refusals import RefusalRate

logger = logging.getLogger(__name__)

MAX_PRINCIPALS = 10_000


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits that apply to one call: router-wide and for its upstream."""

    calls_per_minute: int | None = None
    concurrent_calls: int | None = None
    upstream_calls_per_minute: int | None = None
    upstream_concurrent_calls: int | None = None
    result_mib_per_hour: float | None = None
    upstream_result_mib_per_hour: float | None = None

    @property
    def unlimited(self) -> bool:
        return all(
            value is None
            for value in (
                self.calls_per_minute,
                self.concurrent_calls,
                self.upstream_calls_per_minute,
                self.upstream_concurrent_calls,
                self.result_mib_per_hour,
                self.upstream_result_mib_per_hour,
            )
        )


_N = TypeVar("_N", int, float)


def _most(values: list[_N | None]) -> _N | None:
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
        result_mib_per_hour=_most([q.result_mib_per_hour for q in matching]),
        upstream_result_mib_per_hour=_most(
            [u.result_mib_per_hour if u else None for u in upstream]
        ),
    )


CODE_RUNS = "#code-runs"
"""The bucket of code mode's runs (no server is named so)."""


def code_runs_limit(quotas: Mapping[str, Quota], profiles: tuple[str, ...] | None) -> int | None:
    """A caller's `code_runs_per_minute`, chosen as `limits_for` chooses."""
    matching = [quotas[name] for name in profiles or () if name in quotas]
    if not matching and DEFAULT_PROFILE in quotas:
        matching = [quotas[DEFAULT_PROFILE]]
    return _most([q.code_runs_per_minute for q in matching]) if matching else None


@dataclass(frozen=True, slots=True)
class OverQuota:
    """Which quota a call is over, its limit, and in how many seconds it allows one more."""

    quota: str
    limit: float
    retry_after: float

    def message(self) -> str:
        return (
            f"over quota: {self.quota} is {self.limit:g} for this principal "
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


class SharedBucketStore(Protocol):
    """Buckets every replica takes from (`router.store.quota_buckets.SharedBuckets`)."""

    def take(
        self, principal: str, scopes: Sequence[tuple[str, int]]
    ) -> tuple[int, float] | None: ...


class QuotaBook:
    """The counts of every principal, thread-safe; `clock` is monotonic seconds.

    With `shared` (the store's buckets), `calls_per_minute` is counted there, across every
    replica (blocking: call `admit` in a worker thread); a store that cannot be reached is
    logged once and this process counts until it answers again. Calls in flight are always
    this process's own."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedBucketStore | None = None,
    ) -> None:
        self._clock = clock
        self.shared = shared
        self._lock = threading.Lock()
        self._usage: OrderedDict[str, _Usage] = OrderedDict()
        self._store_down = False
        self.refusals = RefusalRate(clock)
        """Each principal's refused requests (`refused_per_minute`)."""

    def admit(self, principal: str, server: str, limits: Limits) -> Callable[[], None] | OverQuota:
        """Count one call of `principal` to `server`'s tool, or say which quota it is over
        (nothing is counted then). Admitted, the answer releases its place in flight: call
        it once the call ends."""
        if limits.unlimited:
            return _nothing
        scopes = _scopes(server, limits)
        with self._lock:
            usage = self._seen(principal)
            over = self._over_concurrency(usage, scopes)
            if over is not None:
                return over
        rated = [scope for scope in scopes if scope.per_minute is not None]
        counted_here = True
        if self.shared is not None and rated:
            over, counted_here = self._take_shared(principal, rated)
            if over is not None:
                return over
        with self._lock:
            over = self._over_concurrency(usage, scopes)
            if over is not None:
                return over
            now = self._clock()
            over = self._over_results(usage, scopes, now)
            if over is not None:
                return over
            if counted_here:
                for scope in rated:
                    assert scope.per_minute is not None
                    bucket = self._refilled(usage, scope.key, scope.per_minute, 60.0, now)
                    if bucket.tokens < 1.0:
                        wait = (1.0 - bucket.tokens) * 60 / scope.per_minute
                        return OverQuota(scope.label("calls_per_minute"), scope.per_minute, wait)
                for scope in rated:
                    usage.buckets[scope.key].tokens -= 1.0
            for scope in scopes:
                if scope.concurrent is not None:
                    usage.in_flight[scope.key] = usage.in_flight.get(scope.key, 0) + 1
        return self._releaser(usage, [s.key for s in scopes if s.concurrent is not None])

    def admit_run(self, principal: str, per_minute: int) -> OverQuota | None:
        """Count one code-mode run of `principal`, or say it is over `code_runs_per_minute`."""
        scope = _Scope(CODE_RUNS, "", per_minute, None)
        if self.shared is not None:
            over, counted_here = self._take_shared(principal, [scope])
            if not counted_here:
                return _renamed(over)
        with self._lock:
            usage = self._seen(principal)
            bucket = self._refilled(usage, CODE_RUNS, per_minute, 60.0, self._clock())
            if bucket.tokens < 1.0:
                wait = (1.0 - bucket.tokens) * 60 / per_minute
                return OverQuota("code_runs_per_minute", per_minute, wait)
            bucket.tokens -= 1.0
        return None

    def _seen(self, principal: str) -> _Usage:
        usage = self._usage.pop(principal, None) or _Usage()
        self._usage[principal] = usage  # the most recently seen last
        while len(self._usage) > MAX_PRINCIPALS:
            self._usage.popitem(last=False)
        return usage

    @staticmethod
    def _over_concurrency(usage: _Usage, scopes: Sequence[_Scope]) -> OverQuota | None:
        for scope in scopes:
            limit = scope.concurrent
            if limit is not None and usage.in_flight.get(scope.key, 0) >= limit:
                return OverQuota(scope.label("concurrent_calls"), limit, 1.0)
        return None

    def _take_shared(
        self, principal: str, rated: Sequence[_Scope]
    ) -> tuple[OverQuota | None, bool]:
        """(over, counted here): a token from the store's buckets, or this process's when
        the store cannot be reached."""
        assert self.shared is not None
        wanted = [(scope.key, scope.per_minute or 0) for scope in rated]
        try:
            short = self.shared.take(principal, wanted)
        except StoreError as exc:
            if not self._store_down:
                logger.warning("quotas counted per replica while the store is down: %s", exc)
            self._store_down = True
            return None, True
        self._store_down = False
        if short is None:
            return None, False
        index, tokens = short
        scope = rated[index]
        assert scope.per_minute is not None
        wait = (1.0 - tokens) * 60 / scope.per_minute
        return OverQuota(scope.label("calls_per_minute"), scope.per_minute, wait), False

    def _releaser(self, usage: _Usage, counted: list[str]) -> Callable[[], None]:
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            with self._lock:
                for key in counted:
                    left = usage.in_flight.get(key, 0) - 1
                    if left > 0:
                        usage.in_flight[key] = left
                    else:
                        usage.in_flight.pop(key, None)

        return release

    def spend_results(self, principal: str, server: str, limits: Limits, size: int) -> None:
        """Take `size` bytes of a call's result from `principal`'s `result_mib_per_hour`."""
        with self._lock:
            usage = self._usage.get(principal)
            if usage is None:
                return  # forgotten meanwhile: nothing to take from
            now = self._clock()
            for scope in _scopes(server, limits):
                if scope.mib_per_hour is not None:
                    key = f"mib:{scope.key}"
                    bucket = self._refilled(usage, key, scope.mib_per_hour, 3600.0, now)
                    bucket.tokens -= size / (1 << 20)

    def _over_results(
        self, usage: _Usage, scopes: Sequence[_Scope], now: float
    ) -> OverQuota | None:
        for scope in scopes:
            limit = scope.mib_per_hour
            if limit is not None:
                bucket = self._refilled(usage, f"mib:{scope.key}", limit, 3600.0, now)
                if bucket.tokens <= 0:
                    wait = (-bucket.tokens) * 3600 / limit + 1.0
                    return OverQuota(scope.label("result_mib_per_hour"), limit, wait)
        return None

    @staticmethod
    def _refilled(usage: _Usage, scope: str, capacity: float, period: float, now: float) -> _Bucket:
        """The bucket of `scope`, refilled for the time since its stamp: `capacity` a
        `period` of seconds."""
        bucket = usage.buckets.get(scope)
        if bucket is None:
            bucket = usage.buckets[scope] = _Bucket(float(capacity), now)
        bucket.tokens = min(
            float(capacity), bucket.tokens + (now - bucket.stamp) * capacity / period
        )
        bucket.stamp = now
        return bucket


def _scopes(server: str, limits: Limits) -> tuple[_Scope, _Scope]:
    return (
        _Scope(
            "*", "", limits.calls_per_minute, limits.concurrent_calls, limits.result_mib_per_hour
        ),
        _Scope(
            server,
            f"{server}.",
            limits.upstream_calls_per_minute,
            limits.upstream_concurrent_calls,
            limits.upstream_result_mib_per_hour,
        ),
    )


@dataclass(frozen=True, slots=True)
class _Scope:
    key: str
    """`*` for the router-wide limits, else the server's name."""
    prefix: str
    per_minute: int | None
    concurrent: int | None
    mib_per_hour: float | None = None

    def label(self, limit: str) -> str:
        return f"{self.prefix}{limit}"


def _renamed(over: OverQuota | None) -> OverQuota | None:
    if over is None:
        return None
    return OverQuota("code_runs_per_minute", over.limit, over.retry_after)


def _nothing() -> None:
    return None
