"""When a lazy upstream runs: parked until a call needs it, stopped again once idle.

A lazy upstream (`router.start`) whose listing is known waits, not running, until a request
needs it; the first such request wakes its owner task (one start however many requests wait),
and every request counts as use while it is in flight. A running lazy upstream with no
request in flight and no resource watched is stopped once `timeouts.idle` seconds have gone
by since the last one ended. The owner task alone starts and stops the connection; this is
the state it and the requesting tasks share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

from router.config import EffectiveTimeouts
from router.core.changes import Changes
from router.core.errors import UpstreamUnavailable
from router.upstream.health import Health
from router.upstream.state import UpstreamState


class Demand:
    """The requests on one upstream, and whether its owner task waits for one."""

    def __init__(self, name: str, *, lazy: bool = False, idle: float = 600.0) -> None:
        self.name = name
        self.lazy = lazy
        self.idle = idle
        """Seconds without a request before a running lazy upstream stops."""
        self.parked = False
        """The owner task waits for a request (or is about to, after an idle stop)."""
        self.in_flight = 0
        self._needed = anyio.Event()
        self._activity = Changes()
        self._last_used: float | None = None

    @contextmanager
    def using(self) -> Iterator[None]:
        """Around every request: in use while inside, and the idle time counts from its end."""
        done = self.hold()
        try:
            yield
        finally:
            done()

    def hold(self) -> Callable[[], None]:
        """In use until the returned function is called (once; later calls do nothing)."""
        self.in_flight += 1
        self._activity.notify()
        held = True

        def done() -> None:
            nonlocal held
            if held:
                held = False
                self.in_flight -= 1
                self._last_used = anyio.current_time()
                self._activity.notify()

        return done

    def need(self) -> None:
        """A request needs the upstream running: wake the parked owner task."""
        if self.parked:
            self._needed.set()

    async def until_needed(self) -> None:
        """The owner task: park until a request needs the upstream (at once if one came
        while it was stopping)."""
        self.parked = True
        try:
            await self._needed.wait()
        finally:
            self.parked = False
            self._needed = anyio.Event()

    async def until_idle(self, watched: Callable[[], bool]) -> None:
        """The owner task, while connected: return once no request has been in flight for
        `idle` seconds and nothing is `watched`; the caller then stops the connection
        (`parked` is already true, so a request arriving meanwhile starts it again)."""
        self._last_used = anyio.current_time()
        while True:
            busy = self.in_flight > 0 or watched()
            last = self._last_used if self._last_used is not None else anyio.current_time()
            left = self.idle if busy else last + self.idle - anyio.current_time()
            if not busy and left <= 0:
                self.parked = True
                return
            with anyio.move_on_after(left):
                await self._activity.wait()

    async def start(
        self,
        health: Health,
        changed: Changes,
        running: Callable[[], bool],
        timeouts: EffectiveTimeouts,
    ) -> None:
        """A request found the lazy upstream not running: wake the parked owner task (one
        start for any number of requests) and wait for it, at most the connect timeout,
        until `running` (the upstream's: connected, and what it listed handed on).
        Nothing happens for an upstream that is not one to start so (eager, or within the
        backoff of a failed start): the request then fails as while it is down.

        Raises:
            UpstreamUnavailable: It did not start, naming why.
        """
        if not self.lazy or health.retry_in():
            return
        before = health.attempts if self.parked else health.attempts - 1
        self.need()
        starting = (UpstreamState.CONNECTING, UpstreamState.HEALTHY)
        with anyio.move_on_after(timeouts.connect):
            while health.attempts <= before or (not running() and health.state in starting):
                await changed.wait()
        if running():
            return
        failed = health.state is UpstreamState.UNHEALTHY and health.last_error
        why = failed or f"no answer within its connect timeout, {timeouts.connect:g}s"
        raise UpstreamUnavailable(self.name, f"did not start ({why})")

    def retime(self, idle: float) -> None:
        self.idle = idle
        self._activity.notify()
