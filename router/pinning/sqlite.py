"""The pins of one machine: a SQLite file in the cache folder (`tool-pins.sqlite3`, 0600).

Several routers sharing a cache folder (one per host) share their approvals; the first to see
a server records it. WAL, so readers never wait for the one writer; a writer waits at most
`BUSY_SECONDS` for another's lock, then the pins count as unreadable (fail closed) until a
later write gets through. Any `sqlite3.Error` or `OSError` is raised as `StoreError`.

Two tables: `origin_pins`, a row per (origin, server, tool) (`router.pinning.origin`), and
`pins`, the rows keyed by name alone that routers before origins wrote (and still write, if
one shares the folder): they read as origin "", and are copied to an origin when an entry of
that name first reads them (`adopt`), never changed by this version otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.core.errors import StoreError
from router.core.sqlite import connect
from router.pinning.decide import Pin, RowKey, Seen, canonical, loads
from router.pinning.origin import LEGACY

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
_ORIGIN_SCHEMA = """
CREATE TABLE IF NOT EXISTS origin_pins (
    origin TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    approved_fingerprint TEXT,
    approved_definition TEXT,
    pending_fingerprint TEXT,
    pending_definition TEXT,
    first_seen REAL NOT NULL,
    changed_at REAL,
    PRIMARY KEY (origin, server, tool)
)
"""
_COLUMNS = (
    "server, tool, approved_fingerprint, approved_definition, pending_fingerprint, "
    "pending_definition, first_seen, changed_at"
)
_BOTH = (
    f"SELECT '' AS origin, {_COLUMNS} FROM pins "
    f"UNION ALL SELECT origin, {_COLUMNS} FROM origin_pins"
)
"""Every row of both tables, the name-only ones as origin ""."""


def _table(origin: str) -> tuple[str, str, tuple[str, ...]]:
    """The table of `origin`'s rows, its key columns and their values' prefix."""
    if origin == LEGACY:
        return "pins", "server, tool", ()
    return "origin_pins", "origin, server, tool", (origin,)


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
            connection.execute(_ORIGIN_SCHEMA)
            yield connection
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"tool pins {self.path}: {exc}") from exc
        finally:
            connection.close()

    def read(self) -> dict[RowKey, Seen]:
        with self._connection() as connection:
            return _read(connection)

    @contextmanager
    def locked(self) -> Iterator[_Writer]:
        with self._connection() as connection:
            connection.execute("BEGIN IMMEDIATE")
            yield _Writer(connection)
            connection.commit()

    def rows(self, server: str | None = None) -> list[Pin]:
        where, bound = ("WHERE server = ? ", (server,)) if server is not None else ("", ())
        with self._connection() as connection:
            found = connection.execute(
                f"SELECT * FROM ({_BOTH}) {where}ORDER BY server, tool, origin", bound
            ).fetchall()
        return [
            Pin(s, t, af, loads(ad), pf, loads(pd), first, changed, o)
            for o, s, t, af, ad, pf, pd, first, changed in found
        ]

    def approve(self, key: RowKey, pending: str, now: float) -> bool:
        table, columns, origin = _table(key[0])
        match = " AND ".join(f"{column} = ?" for column in columns.split(", "))
        with self._connection() as connection:
            cursor = connection.execute(
                f"UPDATE {table} SET approved_fingerprint = pending_fingerprint, "
                "approved_definition = pending_definition, pending_fingerprint = NULL, "
                f"pending_definition = NULL, changed_at = ? WHERE {match} "
                "AND pending_fingerprint = ?",
                (now, *origin, *key[1:], pending),
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

    def read(self) -> dict[RowKey, Seen]:
        return _read(self._connection)

    def write(
        self, key: RowKey, print_: str, value: Mapping[str, Any], approved: bool, now: float
    ) -> None:
        text = canonical(value)
        table, columns, origin = _table(key[0])
        marks = ", ".join("?" * (len(origin) + 2))
        if approved:
            self._connection.execute(
                f"INSERT INTO {table} ({columns}, approved_fingerprint, approved_definition, "
                f"first_seen) VALUES ({marks}, ?, ?, ?)",
                (*origin, *key[1:], print_, text, now),
            )
            return
        self._connection.execute(
            f"INSERT INTO {table} ({columns}, pending_fingerprint, pending_definition, "
            f"first_seen, changed_at) VALUES ({marks}, ?, ?, ?, ?) ON CONFLICT ({columns}) DO "
            "UPDATE SET pending_fingerprint = excluded.pending_fingerprint, "
            "pending_definition = excluded.pending_definition, changed_at = excluded.changed_at",
            (*origin, *key[1:], print_, text, now, now),
        )

    def adopt(self, origin: str, server: str) -> None:
        self._connection.execute(
            f"INSERT OR IGNORE INTO origin_pins (origin, {_COLUMNS}) "
            f"SELECT ?, {_COLUMNS} FROM pins WHERE server = ?",
            (origin, server),
        )


def _read(connection: sqlite3.Connection) -> dict[RowKey, Seen]:
    rows = connection.execute(
        "SELECT '', server, tool, approved_fingerprint, pending_fingerprint FROM pins "
        "UNION ALL SELECT origin, server, tool, approved_fingerprint, pending_fingerprint "
        "FROM origin_pins"
    )
    return {(o, s, t): Seen(approved, pending) for o, s, t, approved, pending in rows}
