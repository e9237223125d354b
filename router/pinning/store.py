"""`PinStore`: the pin logic over a backend (`router.pinning.backend`), blocking throughout.

Checking a catalog reads the rows and decides (`router.pinning.decide`); only when something
is to be recorded does it take the backend's write lock, read again and decide again, since
another router (a replica, a second host) may have recorded the same server meanwhile and
only one of them sees it first. A write that cannot get through leaves the decision of the
read: what it would have recorded as a first sight is held as unverified (`Checked`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from router.core.catalog import ToolRecord
from router.core.errors import StoreError
from router.pinning.backend import PinBackend, PinVersion
from router.pinning.decide import Mode, Pin, Reason, ToolKey, decide, definition, fingerprint
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
    """The pins of one backend: the SQLite file of a cache folder, or the shared store's."""

    def __init__(self, backend: PinBackend) -> None:
        self.backend = backend

    @classmethod
    def local(cls, directory: Path) -> PinStore:
        """The pins in `directory/tool-pins.sqlite3`."""
        return cls(SqlitePins(directory))

    @classmethod
    def serving(cls, backend: PinBackend | None, directory: Path) -> PinStore:
        """The pins a router reads: `backend`, the shared store's, when the router has one
        (so no replica trusts on first use what another saw), else those of `directory`."""
        return cls(backend or SqlitePins(directory))

    @property
    def where(self) -> str:
        return self.backend.where

    def check(self, records: Iterable[ToolRecord], mode: Mode) -> Checked:
        """Record what is new or changed among `records`; which are held. A read that fails
        raises `StoreError`; a write that fails holds what it would have trusted."""
        definitions = {r.key: definition(r) for r in records}
        prints = {key: fingerprint(value) for key, value in definitions.items()}
        held, writes = decide(self.backend.read(), prints, mode)
        if not writes:
            return Checked(held, [], prints)
        try:
            with self.backend.locked() as writer:
                held, writes = decide(writer.read(), prints, mode)
                now = time.time()
                for key, approved in writes.items():
                    writer.write(key, prints[key], definitions[key], approved, now)
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
        held, _ = decide(self.backend.read(), prints, mode)
        return held

    def pins(self, key: ToolKey | None = None) -> list[Pin]:
        """Every row by server and tool, or the one of `key`."""
        return self.backend.rows(key)

    def pending(self) -> list[Pin]:
        """The rows with a change waiting for approval."""
        return [pin for pin in self.pins() if pin.pending_fingerprint is not None]

    def pin(self, server: str, tool: str) -> Pin | None:
        """The tool's row, if it was ever seen."""
        return next(iter(self.pins((server, tool))), None)

    def approve(self, server: str, tool: str, pending: str | None = None) -> Pin | None:
        """Approve the tool's pending definition (only if it is `pending`, when given: the
        one a person was shown); the row as it was, or None when nothing was waiting."""
        waiting = self.pin(server, tool)
        if waiting is None or waiting.pending_fingerprint is None:
            return None
        if pending is not None and waiting.pending_fingerprint != pending:
            return None
        if not self.backend.approve((server, tool), waiting.pending_fingerprint, time.time()):
            return None
        logger.info("tool pinning: %s/%s approved", server, tool)
        return waiting

    def watch(self) -> PinVersion:
        """A cheap way to learn that another process wrote the pins (an approval)."""
        return self.backend.watch()
