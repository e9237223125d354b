"""Where the pins live: the seam between the pin logic and a backend.

Two backends: one SQLite file in the cache folder (`router.pinning.sqlite`, one machine) and
the shared store's table (`router.store.pins`, every replica of a `router.store`). Each only
reads and writes rows; `PinStore` (`router.pinning.store`) decides, the same way for both.
Rows are keyed (origin, server, tool) (`RowKey`); origin "" is a row keyed by name alone, as
every pin was before origins (`router.pinning.origin`). Every method blocks, and raises
`StoreError` when the pins cannot be read or written: the caller fails closed
(`router.pinning.Pinning`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from router.pinning.decide import Pin, RowKey, Seen


class PinWriter(Protocol):
    """The pins under the backend's write lock (one writer at a time, fleet-wide)."""

    def read(self) -> dict[RowKey, Seen]: ...

    def write(
        self, key: RowKey, print_: str, value: Mapping[str, Any], approved: bool, now: float
    ) -> None:
        """Record `print_` as the approved fingerprint of a tool first seen now, or as its
        pending one (a change, or a new tool that `strict` holds)."""
        ...

    def adopt(self, origin: str, server: str) -> None:
        """Copy `server`'s rows keyed by name alone to `origin`, where it has none yet: the
        pins recorded before origins apply to the entry of that name that reads them."""
        ...


class PinVersion(Protocol):
    """A cheap way to learn that the pins changed (an approval elsewhere)."""

    def version(self) -> object:
        """A value that changes whenever another writer committed."""
        ...

    def close(self) -> None: ...


class PinBackend(Protocol):
    """One table of pins: a row per (origin, server, tool)."""

    @property
    def kind(self) -> str:
        """ "sqlite" or "postgresql", as `/healthz` names it."""
        ...

    @property
    def where(self) -> str:
        """The file, or the store's URL without its password: named in logs and `/healthz`."""
        ...

    def exists(self) -> bool:
        """Whether anything could have been recorded (a file never made holds nothing)."""
        ...

    def read(self) -> dict[RowKey, Seen]: ...

    def locked(self) -> AbstractContextManager[PinWriter]:
        """A transaction holding the write lock; committed when the block ends."""
        ...

    def rows(self, server: str | None = None) -> list[Pin]:
        """Every row (of every origin) by server and tool, or those of `server`."""
        ...

    def approve(self, key: RowKey, pending: str, now: float) -> bool:
        """Make the pending definition the approved one, if it is still `pending`; whether
        a row changed."""
        ...

    def watch(self) -> PinVersion: ...
