"""Readings of the router under soak: its RSS and open fds and those of its children (the
upstream servers), and the MCP sessions it holds (`/healthz`), taken every few seconds
through the run and at the quiet points between phases."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import httpx2

from benchmarks.soak.procfs import Usage, tree

QUIET_TIMEOUT = 30.0
"""Seconds a quiet point waits for the sessions to close and the fds to settle."""
QUIET_POLL = 0.5


@dataclass(frozen=True, slots=True)
class Reading:
    """The router and its children at one moment, and the sessions it held."""

    t_s: float
    phase: str
    router: Usage
    children: tuple[Usage, ...]
    sessions: int | None

    def row(self) -> dict[str, Any]:
        """The reading as one entry of the result's series."""
        return {
            "t_s": self.t_s,
            "phase": self.phase,
            "router_rss_kib": self.router.rss_kib,
            "router_fds": self.router.fds,
            "children": len(self.children),
            "children_rss_kib": sum(c.rss_kib for c in self.children),
            "children_fds": sum(c.fds for c in self.children),
            "sessions": self.sessions,
        }

    def detail(self) -> dict[str, Any]:
        """The reading with each child on its own (for the quiet points)."""
        each = [
            {"pid": c.pid, "name": c.name, "rss_kib": c.rss_kib, "fds": c.fds}
            for c in self.children
        ]
        return {**self.row(), "each_child": each}


@dataclass
class Monitor:
    """Reads the router process `pid` (and its `/healthz` at `url`) on one keep-alive
    connection, so the monitor's own connection is one fd at every reading."""

    url: str
    pid: int
    http: httpx2.AsyncClient
    began: float = field(default_factory=time.monotonic)
    phase: str = "start"
    samples: list[Reading] = field(default_factory=list)
    _one_at_a_time: anyio.Lock = field(default_factory=anyio.Lock)

    async def read(self) -> Reading:
        async with self._one_at_a_time:  # two at once would open a second connection
            return await self._read()

    async def _read(self) -> Reading:
        try:
            health = await self.http.get(f"{self.url}/healthz")
            sessions: int | None = health.json()["sessions"]
        except (httpx2.HTTPError, ValueError, KeyError):
            sessions = None
        router, children = await anyio.to_thread.run_sync(tree, self.pid)
        t_s = round(time.monotonic() - self.began, 1)
        return Reading(t_s, self.phase, router, tuple(children), sessions)

    async def sample_every(self, seconds: float) -> None:
        """Append a reading to `samples` every `seconds` until cancelled."""
        next_at = time.monotonic()
        while True:
            self.samples.append(await self.read())
            next_at += seconds
            await anyio.sleep(max(0.0, next_at - time.monotonic()))

    async def quiet(self) -> tuple[Reading, bool]:
        """A reading once no session is open and the router's fd count held still between
        two readings; and whether that happened within `QUIET_TIMEOUT` (if not, the last
        reading)."""
        previous = None
        with anyio.move_on_after(QUIET_TIMEOUT):
            while True:
                reading = await self.read()
                if (
                    reading.sessions == 0
                    and previous is not None
                    and previous.router.fds == reading.router.fds
                ):
                    return reading, True
                previous = reading
                await anyio.sleep(QUIET_POLL)
        return await self.read(), False
