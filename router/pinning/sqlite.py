"""The pins of one machine: a SQLite file in the cache folder (`tool-pins.sqlite3`, 0600).

Several routers sharing a cache folder (one per host) share their approvals; the first to see
a server records it. WAL, so readers never wait for the one writer; a writer waits at most
`BUSY_SECONDS` for another's lock, then the pins count as unreadable (fail closed) until a
later write gets through. Any `sqlite3.Error` or `OSError` is raised as `StoreError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.core.errors import StoreError
from router.core.sqlite import connect
from router.pinning.decide import Pin, Seen, ToolKey, canonical, loads

if TYPE_CHECKING:
    import sqlite3

PINS_FILE = "tool-pins.sqlite3"
"""Its name in the cache folder."""
BUSY_SECONDS = 5.0
"""How long a pin write waits for another process's lock (writes take milliseconds)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pins (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    approved_fingerprint TEXT,
    approved_definition TEXT,
    pending_fingerprint TEXT,
    pending_definition TEXT,
    first_seen REAL NOT NULL,
    changed_at REAL,
    PRIMARY KEY (server, tool)
)
"""
_COLUMNS = (
    "server, tool, approved_fingerprint, approved_definition, pending_fingerprint, "
    "pending_definition, first_seen, changed_at"
)


class SqlitePins:
    """The pins in `directory/tool-pins.sqlite3`."""

    kind = "sqlite"

    def __init__(self, directory: Path) -> None:
        self.path = directory / PINS_FILE

    @property
    def where(self) -> str:
        return str(self.path)

    def exists(self) -> bool:
        return self.path.exists()

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection, the file made first with mode 0600 (it says which tools a person
        approved), in a folder only the owner may enter when the router made it."""
        import sqlite3

        try:
            connection = connect(self.path, _SCHEMA, timeout=BUSY_SECONDS, private=True)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"tool pins {self.path}: {exc}") from exc
        try:
            yield connection
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"tool pins {self.path}: {exc}") from exc
        finally:
            connection.close()

    def read(self) -> dict[ToolKey, Seen]:
        with self._connection() as connection:
            return _read(connection)

    @contextmanager
    def locked(self) -> Iterator[_Writer]:
        with self._connection() as connection:
            connection.execute("BEGIN IMMEDIATE")
            yield _Writer(connection)
            connection.commit()

    def rows(self, key: ToolKey | None = None) -> list[Pin]:
        where, bound = ("WHERE server = ? AND tool = ? ", key) if key is not None else ("", ())
        with self._connection() as connection:
            found = connection.execute(
                f"SELECT {_COLUMNS} FROM pins {where}ORDER BY server, tool", bound
            ).fetchall()
        return [
            Pin(s, t, af, loads(ad), pf, loads(pd), first, changed)
            for s, t, af, ad, pf, pd, first, changed in found
        ]

    def approve(self, key: ToolKey, pending: str, now: float) -> bool:
        with self._connection() as connection:
            cursor = connection.execute(
                "UPDATE pins SET approved_fingerprint = pending_fingerprint, "
                "approved_definition = pending_definition, pending_fingerprint = NULL, "
                "pending_definition = NULL, changed_at = ? "
                "WHERE server = ? AND tool = ? AND pending_fingerprint = ?",
                (now, *key, pending),
            )
            connection.commit()
        return cursor.rowcount > 0

    def watch(self) -> SqliteVersion:
        import sqlite3

        try:
            return SqliteVersion(
                connect(
                    self.path,
                    _SCHEMA,
                    timeout=BUSY_SECONDS,
                    private=True,
                    check_same_thread=False,
                )
            )
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"tool pins {self.path}: {exc}") from exc


class SqliteVersion:
    """`PRAGMA data_version` on one long-lived connection: it changes exactly when another
    connection committed, so polling it costs no read of the table."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def version(self) -> int:
        import sqlite3

        try:
            return int(self._connection.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(f"tool pins: {exc}") from exc

    def close(self) -> None:
        self._connection.close()


class _Writer:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def read(self) -> dict[ToolKey, Seen]:
        return _read(self._connection)

    def write(
        self, key: ToolKey, print_: str, value: Mapping[str, Any], approved: bool, now: float
    ) -> None:
        text = canonical(value)
        if approved:
            self._connection.execute(
                "INSERT INTO pins (server, tool, approved_fingerprint, approved_definition, "
                "first_seen) VALUES (?, ?, ?, ?, ?)",
                (*key, print_, text, now),
            )
            return
        self._connection.execute(
            "INSERT INTO pins (server, tool, pending_fingerprint, pending_definition, "
            "first_seen, changed_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server, tool) DO "
            "UPDATE SET pending_fingerprint = excluded.pending_fingerprint, "
            "pending_definition = excluded.pending_definition, changed_at = excluded.changed_at",
            (*key, print_, text, now, now),
        )


def _read(connection: sqlite3.Connection) -> dict[ToolKey, Seen]:
    rows = connection.execute(
        "SELECT server, tool, approved_fingerprint, pending_fingerprint FROM pins"
    )
    return {(server, tool): Seen(approved, pending) for server, tool, approved, pending in rows}
