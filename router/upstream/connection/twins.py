"""A second connection to a remote upstream, over the handshake, for hosts on a handshake
revision, where the router serves many hosts (HTTP; with one host, `router.upstream.connection.eras`
mirrors its era on the one connection instead).

A remote upstream set to `protocol: auto` that offers 2026-07-28 is reached over that revision:
its listing, its change notifications (which SDK-built servers send only on
`subscriptions/listen`) and the calls of 2026-07-28 hosts go there. But such a server's tools
that ask mid-call through their session (`create_message`, `elicit`) can ask only on a
handshake-era connection. So the first call of a handshake-era host opens a twin: the same
server over `initialize`, whose mid-call requests reach that host on the call's stream as they
would directly. Calls, reads and prompts of handshake-era hosts go to the twin once it is up;
a twin that cannot connect (a server that refuses the handshake) is stopped, and those hosts
use the 2026-07-28 connection as before. The twin lists but indexes nothing and reports no
status; it costs one more HTTP session at the server. A stdio upstream gets no twin: a second
process would hold state of its own, so calls would change one process while the listing
came from another.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.abc

from router.config import RemoteServer
from router.upstream.state import UpstreamState
from router.upstream.upstream import Upstream

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, eq=False)
class _Running:
    """One twin's task: its cancel scope, made before the task, and the end of it."""

    scope: anyio.CancelScope
    ended: anyio.Event


class HandshakeTwins:
    """At most one twin per upstream, started on demand in the pool's task group."""

    def __init__(self, make: Callable[[Upstream], Upstream], *, enabled: bool = True) -> None:
        """`make(primary)` builds the twin of `primary` (not started)."""
        self._make = make
        self._enabled = enabled
        self._twins: dict[str, Upstream] = {}
        self._unusable: set[str] = set()
        self._running: dict[str, _Running] = {}
        self._task_group: anyio.abc.TaskGroup | None = None
        self._context: contextvars.Context | None = None
        """The pool's own, saved where it starts: each twin's task starts in a copy of it,
        never in the context of the host's call that opened the twin (on asyncio a task keeps
        the context it started in, so what the twin asked or logged outside any call would go
        to that first call's session, the relay's record of it being still there)."""

    def attach(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Where the pool starts (`task_group`) and stops (None): never inside a request."""
        self._task_group = task_group
        self._context = contextvars.copy_context() if task_group is not None else None

    @property
    def running(self) -> dict[str, Upstream]:
        return dict(self._twins)

    def drop(self, name: str) -> None:
        """Stop `name`'s twin, if any: its upstream was removed or restarted. Effective
        whenever it comes: a twin whose task has not started yet never runs, since its
        cancel scope exists (cancelled) before the task does; a request waiting for the
        twin to connect stops waiting."""
        self._twins.pop(name, None)
        self._unusable.discard(name)
        running = self._running.pop(name, None)
        if running is not None:
            running.scope.cancel()
            running.ended.set()

    async def for_host(self, primary: Upstream, handshake_host: bool) -> Upstream:
        """The connection a host's request to `primary`'s server goes out on."""
        if (
            not self._enabled
            or not handshake_host
            or not isinstance(primary.server, RemoteServer)
            or primary.server.connect_mode != "auto"
            or not primary.speaks_modern
            or primary.name in self._unusable
            or self._task_group is None
            or self._context is None
        ):
            return primary
        twin = self._twins.get(primary.name)
        if twin is None:
            twin = self._twins[primary.name] = self._make(primary)
            running = self._running[primary.name] = _Running(anyio.CancelScope(), anyio.Event())
            group, task = self._task_group, f"upstream {primary.name} (twin)"
            self._context.copy().run(lambda: group.start_soon(self._run, twin, running, name=task))
            logger.info(
                "upstream %s: a handshake-era connection beside the 2026-07-28 one, for hosts "
                "on a handshake revision",
                primary.name,
            )
        current = self._running.get(primary.name)
        if current is not None:
            with anyio.move_on_after(primary.timeouts.connect):
                await _settled_or_ended(twin, current.ended)
        return twin if twin.state is UpstreamState.HEALTHY else primary

    async def _run(self, twin: Upstream, running: _Running) -> None:
        """The twin's task, inside `running.scope` (made, and perhaps cancelled by `drop`,
        before this started). What it changes here is its own only: a dropped twin's
        successor may be in the tables by now."""
        name = twin.name
        try:
            with running.scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(twin.run)
                    status = await twin.wait_settled()
                    if not status.healthy:
                        logger.info(
                            "upstream %s: no handshake-era connection (%s); its "
                            "handshake-era hosts use the 2026-07-28 one",
                            name,
                            status.last_error,
                        )
                        if self._twins.get(name) is twin:
                            self._unusable.add(name)
                        running.scope.cancel()
        finally:
            running.ended.set()
            if self._running.get(name) is running:
                del self._running[name]
            if self._twins.get(name) is twin:  # ended: the next request asks anew
                del self._twins[name]


async def _settled_or_ended(twin: Upstream, ended: anyio.Event) -> None:
    """Until the twin's first attempt has ended, or its task has."""
    async with anyio.create_task_group() as group:

        async def settled() -> None:
            await twin.wait_settled()
            group.cancel_scope.cancel()

        group.start_soon(settled)
        await ended.wait()
        group.cancel_scope.cancel()
