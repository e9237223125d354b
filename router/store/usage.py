"""Usage pairs in the shared store: the table `mcp_router_usage`, per namespace.

The `SharedUsage` of `router.retrieval.usage_scopes` (implemented, never imported: the
retriever's package and the store's are siblings). One row per (model, scope, pair), the
scope a hash of the principal (or "" without identities), so what a principal's calls teach
on one replica lifts the tool on every replica, and never for another principal. Each write
takes the next value of one sequence as the row's `version`; a replica's memory asks only for
rows past the highest version it has seen (`changed`), one index read per search.

Bounded twice: each scope keeps its `keep` most recently used pairs (1,000 per principal,
as in the files), and the namespace at most `MAX_ROWS` rows, the least recently used of any
scope going first (checked every `PRUNE_EVERY` writes of a process). Blocking throughout;
failures are `StoreError` (`Connections`).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from router.store.postgres.connections import Connections

if TYPE_CHECKING:
    import psycopg

StoredPair = tuple[str, str, str, bytes, int]
"""(query, server, tool, vector, calls): `router.retrieval.usage.StoredPair`'s shape."""

MAX_ROWS = 200_000
"""Rows of one namespace, every model and scope together (about 300 MiB of vectors at 384
dimensions): 200 principals at their full 1,000 pairs."""
PRUNE_EVERY = 100
_COLUMNS = "query, server, tool, vector, calls, version"


class PostgresUsage:
    """The usage pairs of one namespace of the shared store."""

    def __init__(self, connections: Connections, namespace: str) -> None:
        self._connections = connections
        self.namespace = namespace
        self._writes = itertools.count(1)

    def rows(self, model_id: str, scope: str) -> ScopeRows:
        return ScopeRows(self, model_id, scope)

    def _prune_now(self) -> bool:
        return next(self._writes) % PRUNE_EVERY == 0


class ScopeRows:
    """One scope's pairs for one model: the `UsageRows` a `UsageMemory` persists through."""

    def __init__(self, usage: PostgresUsage, model_id: str, scope: str) -> None:
        self._usage = usage
        self._connections = usage._connections
        self._where = (usage.namespace, model_id, scope)
        self._seen = 0  # the highest version read
        self._lock = threading.Lock()

    def load(self, limit: int) -> list[StoredPair]:
        with self._connections.connection() as connection:
            found = connection.execute(
                f"SELECT {_COLUMNS} FROM (SELECT * FROM mcp_router_usage "
                "WHERE namespace = %s AND model_id = %s AND scope = %s "
                "ORDER BY last_used DESC LIMIT %s) AS newest ORDER BY last_used ASC",
                (*self._where, limit),
            ).fetchall()
        return self._pairs(found)

    def changed(self) -> list[StoredPair]:
        with self._lock:
            seen = self._seen
        with self._connections.connection() as connection:
            found = connection.execute(
                f"SELECT {_COLUMNS} FROM mcp_router_usage WHERE namespace = %s AND "
                "model_id = %s AND scope = %s AND version > %s ORDER BY version",
                (*self._where, seen),
            ).fetchall()
        return self._pairs(found)

    def add(
        self, query: str, keys: Sequence[tuple[str, str]], vector: bytes, now: float, keep: int
    ) -> None:
        rows = [(*self._where, _pair(query, s, t), query, s, t, vector, now) for s, t in keys]
        with self._connections.connection() as connection, connection.transaction():
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO mcp_router_usage (namespace, model_id, scope, pair, query, "
                    "server, tool, vector, calls, last_used) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 1, %s) "
                    "ON CONFLICT (namespace, model_id, scope, pair) DO UPDATE SET "
                    "calls = mcp_router_usage.calls + 1, last_used = excluded.last_used, "
                    "version = nextval('mcp_router_usage_version')",
                    rows,
                )
            connection.execute(
                "DELETE FROM mcp_router_usage WHERE namespace = %s AND model_id = %s AND "
                "scope = %s AND pair IN (SELECT pair FROM mcp_router_usage WHERE "
                "namespace = %s AND model_id = %s AND scope = %s "
                "ORDER BY last_used DESC OFFSET %s)",
                (*self._where, *self._where, keep),
            )
            if self._usage._prune_now():
                _prune(connection, self._where[0])

    def _pairs(self, found: list[tuple[Any, ...]]) -> list[StoredPair]:
        if found:
            with self._lock:
                self._seen = max(self._seen, *(int(row[5]) for row in found))
        return [(str(q), str(s), str(t), bytes(v), int(c)) for q, s, t, v, c, _ in found]


def _pair(query: str, server: str, tool: str) -> str:
    """The row's key: a hash, since a query may be longer than an index entry can be."""
    text = "\0".join((query, server, tool)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()


def _prune(connection: psycopg.Connection[Any], namespace: str) -> None:
    connection.execute(
        "DELETE FROM mcp_router_usage WHERE namespace = %s AND last_used < ("
        "SELECT last_used FROM mcp_router_usage WHERE namespace = %s "
        "ORDER BY last_used DESC OFFSET %s LIMIT 1)",
        (namespace, namespace, MAX_ROWS),
    )
