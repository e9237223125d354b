"""`PinStore`: the pin logic over a backend (`router.pinning.backend`), blocking throughout.

Checking a catalog reads the rows and decides (`router.pinning.decide`); only when something
is to be recorded does it take the backend's write lock, read again and decide again, since
another router (a replica, a second host) may have recorded the same server meanwhile and
only one of them sees it first. A write that cannot get through leaves the decision of the
read: what it would have recorded as a first sight is held as unverified (`Checked`).

A store serves one config: its `origins` say what each server of that name is
(`router.pinning.origin`), and it reads only the rows of those origins, so another config's
same-named server neither holds nor releases its tools. A row keyed by name alone (recorded
before origins) stands for every origin of that name that has no row of its own, and is
copied to it (`PinBackend.adopt`) the first time a check of that server writes: a rug pull
recorded before the upgrade stays held, and an approval made after it is the origin's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from router.core.catalog import ToolRecord
from router.core.errors import StoreError
from router.pinning.backend import PinBackend, PinVersion
from router.pinning.decide import (
    Mode,
    Pin,
    Reason,
    RowKey,
    Seen,
    ToolKey,
    decide,
    definition,
    fingerprint,
)
from router.pinning.origin import LEGACY
from router.pinning.sqlite import SqlitePins

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Checked:
    """What one check of a catalog found."""

    held: dict[ToolKey, Reason]
    recorded: list[ToolKey] = field(default_factory=list)
    """The held tools whose change this check recorded (held just now)."""
    prints: dict[ToolKey, str] = field(default_factory=dict)
    """Every checked tool's fingerprint."""
    error: str | None = None
    """Why the check's write did not get through (its tools first seen are held)."""


class PinStore:
    """The pins of one backend, as one config's servers (`origins`) see them."""

    def __init__(self, backend: PinBackend, origins: Mapping[str, str] | None = None) -> None:
        self.backend = backend
        self._origins: Mapping[str, str] = dict(origins or {})

    @classmethod
    def local(cls, directory: Path, origins: Mapping[str, str] | None = None) -> PinStore:
        """The pins in `directory/tool-pins.sqlite3`."""
        return cls(SqlitePins(directory), origins)

    @classmethod
    def serving(
        cls, backend: PinBackend | None, directory: Path, origins: Mapping[str, str] | None = None
    ) -> PinStore:
        """The pins a router reads: `backend`, the shared store's, when the router has one
        (so no replica trusts on first use what another saw), else those of `directory`."""
        return cls(backend or SqlitePins(directory), origins)

    @property
    def where(self) -> str:
        return self.backend.where

    def serve(self, origins: Mapping[str, str]) -> None:
        """The servers' origins of a config applied while serving (a reload)."""
        self._origins = dict(origins)

    def origin(self, server: str) -> str:
        """What `server` is; `LEGACY` (its name alone) for one the config does not name."""
        return self._origins.get(server, LEGACY)

    def check(self, records: Iterable[ToolRecord], mode: Mode) -> Checked:
        """Record what is new or changed among `records`; which are held. A read that fails
        raises `StoreError`; a write that fails holds what it would have trusted."""
        origins = dict(self._origins)  # one reload's, for the whole check
        definitions = {r.key: definition(r) for r in records}
        prints = {key: fingerprint(value) for key, value in definitions.items()}
        rows = self.backend.read()
        held, writes = decide(_seen(rows, origins), prints, mode)
        adopt = _unadopted(rows, origins, {server for server, _ in prints})
        if not writes and not adopt:
            return Checked(held, [], prints)
        try:
            with self.backend.locked() as writer:
                for server in _unadopted(writer.read(), origins, adopt):
                    writer.adopt(origins[server], server)
                held, writes = decide(_seen(writer.read(), origins), prints, mode)
                now = time.time()
                for (server, tool), approved in writes.items():
                    key = (origins.get(server, LEGACY), server, tool)
                    writer.write(
                        key, prints[server, tool], definitions[server, tool], approved, now
                    )
        except StoreError as exc:
            unverified: dict[ToolKey, Reason] = {
                key: "unverified" for key, approved in writes.items() if approved
            }
            return Checked({**held, **unverified}, [], prints, str(exc))
        return Checked(held, [key for key, approved in writes.items() if not approved], prints)

    def held_now(self, records: Iterable[ToolRecord], mode: Mode) -> dict[ToolKey, Reason]:
        """Which of `records` would be held now, and why, recording nothing (`inspect`, and
        a serving router's look for approvals). Raises `StoreError` when unreadable."""
        prints = {r.key: fingerprint(definition(r)) for r in records}
        if not prints or mode == "off" or not self.backend.exists():
            return {}
        held, _ = decide(_seen(self.backend.read(), dict(self._origins)), prints, mode)
        return held

    def pins(self, server: str | None = None) -> list[Pin]:
        """The rows of this config's servers (of `server`), by server and tool: each
        server's own origin's, else the one keyed by its name alone."""
        origins = dict(self._origins)
        rows = self.backend.rows(server)
        own = {(pin.origin, pin.server, pin.tool) for pin in rows}
        return [
            pin
            for pin in rows
            if pin.origin == origins.get(pin.server, LEGACY)
            or (pin.origin == LEGACY and (origins[pin.server], pin.server, pin.tool) not in own)
        ]

    def pending(self) -> list[Pin]:
        """The rows with a change waiting for approval."""
        return [pin for pin in self.pins() if pin.pending_fingerprint is not None]

    def pin(self, server: str, tool: str) -> Pin | None:
        """The tool's row, if it was ever seen."""
        return next((pin for pin in self.pins(server) if pin.tool == tool), None)

    def approve(self, server: str, tool: str, pending: str | None = None) -> Pin | None:
        """Approve the tool's pending definition (only if it is `pending`, when given: the
        one a person was shown); the row as it was, or None when nothing was waiting. A
        row keyed by name alone is first copied to the server's origin, which alone it
        approves."""
        waiting = self.pin(server, tool)
        if waiting is None or waiting.pending_fingerprint is None:
            return None
        if pending is not None and waiting.pending_fingerprint != pending:
            return None
        origin = self.origin(server)
        if waiting.origin != origin:
            with self.backend.locked() as writer:
                writer.adopt(origin, server)
        key = (origin, server, tool)
        if not self.backend.approve(key, waiting.pending_fingerprint, time.time()):
            return None
        logger.info("tool pinning: %s/%s approved", server, tool)
        return waiting

    def watch(self) -> PinVersion:
        """A cheap way to learn that another process wrote the pins (an approval)."""
        return self.backend.watch()


def _seen(rows: Mapping[RowKey, Seen], origins: Mapping[str, str]) -> dict[ToolKey, Seen]:
    """The rows as one config decides on them: each server's own origin's, else the row
    keyed by its name alone (not adopted yet)."""
    seen: dict[ToolKey, Seen] = {}
    for (origin, server, tool), row in rows.items():
        own = origins.get(server, LEGACY)
        if origin == own or (origin == LEGACY and (own, server, tool) not in rows):
            seen[server, tool] = row
    return seen


def _unadopted(
    rows: Mapping[RowKey, Seen], origins: Mapping[str, str], servers: Iterable[str]
) -> set[str]:
    """Of `servers`, those with an origin and a row keyed by their name alone that their
    origin lacks."""
    wanted = {server for server in servers if origins.get(server, LEGACY) != LEGACY}
    return {
        server
        for origin, server, tool in rows
        if origin == LEGACY and server in wanted and (origins[server], server, tool) not in rows
    }
