"""`Records` in the shared store: the table `mcp_router_records`, per namespace.

What one replica writes (an upstream's OAuth credentials, a lazy upstream's listing) every
replica of the namespace reads. `locked` holds a transaction-scoped advisory lock on the
record's own key, waiting at most `LOCK_TIMEOUT`: the database drops it with the connection
of a replica that dies while holding it. Each kind holds at most `MAX_PER_KIND` records; a
new one past that pushes out the least recently written. Blocking throughout; failures are
`StoreError` (`Connections`), whose text never carries a value.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from router.core.errors import StoreError
from router.store.postgres.connections import Connections
from router.store.postgres.fill import lock_key
from router.store.records import LOCK_TIMEOUT, Held, check_name

if TYPE_CHECKING:
    import psycopg

MAX_PER_KIND = 10_000
"""Records of one kind in one namespace (upstreams a fleet ever configured): bounded."""


class PostgresRecords:
    """The records of one namespace of the shared store."""

    shared = True

    def __init__(self, connections: Connections, namespace: str) -> None:
        self._connections = connections
        self.namespace = namespace

    @property
    def where(self) -> str:
        return f"store {self._connections.where} (namespace {self.namespace!r})"

    def get(self, kind: str, key: str) -> bytes | None:
        check_name(kind, key)
        with self._connections.connection() as connection:
            return _get(connection, self.namespace, kind, key)

    def put(self, kind: str, key: str, value: bytes) -> None:
        check_name(kind, key)
        with self._connections.connection() as connection:
            _put(connection, self.namespace, kind, key, value)

    def delete(self, kind: str, key: str) -> bool:
        check_name(kind, key)
        with self._connections.connection() as connection:
            cursor = connection.execute(
                "DELETE FROM mcp_router_records WHERE namespace = %s AND kind = %s AND key = %s",
                (self.namespace, kind, key),
            )
        return cursor.rowcount > 0

    @contextmanager
    def locked(self, kind: str, key: str) -> Iterator[Held]:
        check_name(kind, key)
        import psycopg

        with self._connections.connection() as connection, connection.transaction():
            connection.execute(f"SET LOCAL lock_timeout = '{int(LOCK_TIMEOUT * 1000)}ms'")
            try:
                connection.execute(
                    "SELECT pg_advisory_xact_lock(%s)", (record_lock(self.namespace, kind, key),)
                )
            except psycopg.errors.LockNotAvailable:
                raise StoreError(
                    f"{self.where}: another replica held the lock of {kind}/{key} for "
                    f"{LOCK_TIMEOUT:g} s"
                ) from None
            yield _HeldRow(connection, self.namespace, kind, key)


def record_lock(namespace: str, kind: str, key: str) -> int:
    """The advisory-lock key of one record (a test holds it to line two replicas up)."""
    return lock_key(f"records\0{namespace}\0{kind}\0{key}")


class _HeldRow:
    def __init__(
        self, connection: psycopg.Connection[Any], namespace: str, kind: str, key: str
    ) -> None:
        self._connection = connection
        self._where = (namespace, kind, key)

    def get(self) -> bytes | None:
        return _get(self._connection, *self._where)

    def put(self, value: bytes) -> None:
        _put(self._connection, *self._where, value)


def _get(connection: psycopg.Connection[Any], namespace: str, kind: str, key: str) -> bytes | None:
    row = connection.execute(
        "SELECT value FROM mcp_router_records WHERE namespace = %s AND kind = %s AND key = %s",
        (namespace, kind, key),
    ).fetchone()
    return bytes(row[0]) if row is not None else None


def _put(
    connection: psycopg.Connection[Any], namespace: str, kind: str, key: str, value: bytes
) -> None:
    row = connection.execute(
        "INSERT INTO mcp_router_records (namespace, kind, key, value) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (namespace, kind, key) DO UPDATE SET value = excluded.value, "
        "updated_at = now() RETURNING (xmax = 0)",
        (namespace, kind, key, value),
    ).fetchone()
    if row is not None and row[0]:  # a new record: the kind may have grown past its bound
        connection.execute(
            "DELETE FROM mcp_router_records WHERE namespace = %s AND kind = %s AND key IN ("
            "SELECT key FROM mcp_router_records WHERE namespace = %s AND kind = %s "
            "ORDER BY updated_at DESC OFFSET %s)",
            (namespace, kind, namespace, kind, MAX_PER_KIND),
        )
