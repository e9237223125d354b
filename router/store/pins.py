"""Tool pins in the shared store: the fleet's one table of them (`mcp_router_pins`).

The `PinBackend` of `router.pinning` for replicas of one `router.store`, per namespace: the
rows every replica decides on, so a tool one replica saw first is never trusted on first use
by another, and an approval written anywhere (a replica's operator, `mcp-router tools
approve`) is the approval of all. Writers take a transaction-scoped advisory lock per
namespace (waiting at most `LOCK_TIMEOUT`), so two replicas that meet a new server together
record it once. Every write takes the next value of one sequence as the row's `version`:
`max(version)` is what replicas poll (`PgVersion`) to learn of an approval within seconds,
an index read. Rows are keyed (origin, server, tool) (`router.pinning.origin`); origin ''
is a row recorded by name alone, before schema version 7. Blocking throughout; failures are
`StoreError` (`Connections`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from router.pinning.decide import Pin, RowKey, Seen, canonical, loads
from router.store.postgres.connections import Connections
from router.store.postgres.fill import lock_key

if TYPE_CHECKING:
    import psycopg

LOCK_TIMEOUT = "5s"
"""How long a pin write waits for another replica's (writes take milliseconds)."""
_COLUMNS = (
    "origin, server, tool, approved_fingerprint, approved_definition, pending_fingerprint, "
    "pending_definition, first_seen, changed_at"
)


class PostgresPins:
    """The pins of one namespace of the shared store."""

    kind = "postgresql"

    def __init__(self, connections: Connections, namespace: str) -> None:
        self._connections = connections
        self.namespace = namespace

    @property
    def where(self) -> str:
        return f"{self._connections.where} (namespace {self.namespace!r})"

    def exists(self) -> bool:
        return True  # the table is made with the schema

    def read(self) -> dict[RowKey, Seen]:
        with self._connections.connection() as connection:
            return _read(connection, self.namespace)

    @contextmanager
    def locked(self) -> Iterator[_Writer]:
        with self._connections.connection() as connection, connection.transaction():
            connection.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            connection.execute(
                "SELECT pg_advisory_xact_lock(%s)", (lock_key(f"pins:{self.namespace}"),)
            )
            yield _Writer(connection, self.namespace)

    def rows(self, server: str | None = None) -> list[Pin]:
        where, bound = "WHERE namespace = %s", [self.namespace]
        if server is not None:
            where, bound = where + " AND server = %s", [*bound, server]
        with self._connections.connection() as connection:
            found = connection.execute(
                f"SELECT {_COLUMNS} FROM mcp_router_pins {where} ORDER BY server, tool, origin",
                bound,
            ).fetchall()
        return [
            Pin(s, t, af, loads(ad), pf, loads(pd), float(first), changed, o)
            for o, s, t, af, ad, pf, pd, first, changed in found
        ]

    def approve(self, key: RowKey, pending: str, now: float) -> bool:
        with self._connections.connection() as connection:
            cursor = connection.execute(
                "UPDATE mcp_router_pins SET approved_fingerprint = pending_fingerprint, "
                "approved_definition = pending_definition, pending_fingerprint = NULL, "
                "pending_definition = NULL, changed_at = %s, "
                "version = nextval('mcp_router_pins_version') "
                "WHERE namespace = %s AND origin = %s AND server = %s AND tool = %s "
                "AND pending_fingerprint = %s",
                (now, self.namespace, *key, pending),
            )
        return cursor.rowcount > 0

    def watch(self) -> PgVersion:
        return PgVersion(self._connections, self.namespace)


class PgVersion:
    """The namespace's highest row version: it moves with every write by any replica."""

    def __init__(self, connections: Connections, namespace: str) -> None:
        self._connections = connections
        self._namespace = namespace

    def version(self) -> int:
        with self._connections.connection() as connection:
            row = connection.execute(
                "SELECT coalesce(max(version), 0) FROM mcp_router_pins WHERE namespace = %s",
                (self._namespace,),
            ).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        pass  # the store's pool is the store's to close


class _Writer:
    def __init__(self, connection: psycopg.Connection[Any], namespace: str) -> None:
        self._connection = connection
        self._namespace = namespace

    def read(self) -> dict[RowKey, Seen]:
        return _read(self._connection, self._namespace)

    def write(
        self, key: RowKey, print_: str, value: Mapping[str, Any], approved: bool, now: float
    ) -> None:
        text = canonical(value)
        if approved:
            self._connection.execute(
                "INSERT INTO mcp_router_pins (namespace, origin, server, tool, "
                "approved_fingerprint, approved_definition, first_seen) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (self._namespace, *key, print_, text, now),
            )
            return
        self._connection.execute(
            "INSERT INTO mcp_router_pins (namespace, origin, server, tool, pending_fingerprint, "
            "pending_definition, first_seen, changed_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (namespace, origin, server, tool) DO UPDATE SET "
            "pending_fingerprint = excluded.pending_fingerprint, "
            "pending_definition = excluded.pending_definition, "
            "changed_at = excluded.changed_at, version = nextval('mcp_router_pins_version')",
            (self._namespace, *key, print_, text, now, now),
        )

    def adopt(self, origin: str, server: str) -> None:
        self._connection.execute(
            "INSERT INTO mcp_router_pins (namespace, origin, server, tool, "
            "approved_fingerprint, approved_definition, pending_fingerprint, "
            "pending_definition, first_seen, changed_at) "
            "SELECT namespace, %s, server, tool, approved_fingerprint, approved_definition, "
            "pending_fingerprint, pending_definition, first_seen, changed_at "
            "FROM mcp_router_pins WHERE namespace = %s AND origin = '' AND server = %s "
            "ON CONFLICT (namespace, origin, server, tool) DO NOTHING",
            (origin, self._namespace, server),
        )


def _read(connection: psycopg.Connection[Any], namespace: str) -> dict[RowKey, Seen]:
    rows = connection.execute(
        "SELECT origin, server, tool, approved_fingerprint, pending_fingerprint "
        "FROM mcp_router_pins WHERE namespace = %s",
        (namespace,),
    ).fetchall()
    return {(str(o), str(s), str(t)): Seen(a, p) for o, s, t, a, p in rows}
