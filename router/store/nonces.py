"""Where sealed states' nonces are spent (`router.approvals.sealing.NonceLedger`), so that a state
authorizes one thing once across everything that shares the ledger.

- `PgNonces`: the shared store's `mcp_router_nonces` table (schema step 3). A claim is one
  `INSERT ... ON CONFLICT DO NOTHING`: the row count says whether this replica was first,
  atomically across every replica of the store.
- `SqliteNonces`: `nonces.sqlite3` in the cache folder (mode 0600), for the routers of one
  machine that share that folder; the same insert, SQLite's write lock making it atomic.

A row lives until its state expires; every `PRUNE_EVERY` claims (or `PRUNE_SECONDS`) the
expired ones go, so the table holds at most the states claimed within one state lifetime.
Neither bounds the rows (a disk holds them), so neither needs the claim's `owner`.
Blocking throughout (`Sealer` calls them in a worker thread). A ledger that cannot be
reached raises (`StoreError`, `sqlite3.Error`, `OSError`): the sealer then refuses the state
("unavailable"), never lets it through unspent.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from router.core.sqlite import connect

if TYPE_CHECKING:
    import sqlite3

    from router.store.postgres.connections import Connections  # psycopg: the postgres extra

NONCES_FILE = "nonces.sqlite3"
"""Its name in the cache folder."""
PRUNE_EVERY = 256
"""Claims between two deletions of expired rows."""
PRUNE_SECONDS = 60.0
"""Seconds between two deletions of expired rows, whatever the number of claims."""
BUSY_SECONDS = 5.0
"""How long a claim waits for another process's SQLite write lock (claims take microseconds)."""
_SCHEMA = "CREATE TABLE IF NOT EXISTS nonces (nonce TEXT PRIMARY KEY, expires REAL NOT NULL)"


class _Pruning:
    """When the next deletion of expired rows is due."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims = 0
        self._at = time.monotonic()

    def due(self) -> bool:
        with self._lock:
            self._claims += 1
            if self._claims < PRUNE_EVERY and time.monotonic() - self._at < PRUNE_SECONDS:
                return False
            self._claims, self._at = 0, time.monotonic()
            return True


class PgNonces:
    """The nonces every replica of one PostgreSQL store spends."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self._pruning = _Pruning()

    def claim(self, nonce: str, expires: float, owner: str = "") -> bool:
        with self._connections.connection() as connection:
            if self._pruning.due():
                connection.execute("DELETE FROM mcp_router_nonces WHERE expires < now()")
            cursor = connection.execute(
                "INSERT INTO mcp_router_nonces (nonce, expires) VALUES (%s, to_timestamp(%s)) "
                "ON CONFLICT (nonce) DO NOTHING",
                (nonce, expires),
            )
        return cursor.rowcount == 1


class SqliteNonces:
    """The nonces the routers sharing one cache folder spend."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / NONCES_FILE
        self._pruning = _Pruning()

    def claim(self, nonce: str, expires: float, owner: str = "") -> bool:
        connection = self._connect()
        try:
            with connection:
                if self._pruning.due():
                    connection.execute("DELETE FROM nonces WHERE expires < ?", (time.time(),))
                cursor = connection.execute(
                    "INSERT INTO nonces (nonce, expires) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (nonce, expires),
                )
            return cursor.rowcount == 1
        finally:
            connection.close()

    def _connect(self) -> sqlite3.Connection:
        """A connection, the file made first with mode 0600 (its rows say when someone
        confirmed a call) in a folder only the owner may enter when the router made it."""
        return connect(self.path, _SCHEMA, timeout=BUSY_SECONDS, private=True)
