"""Quota buckets every replica of one PostgreSQL store shares (`mcp_router_quota_buckets`,
schema step 6), so a principal's `calls_per_minute` holds across the fleet
(`router.policy.quotas`).

A take is one `INSERT ... ON CONFLICT DO UPDATE ... WHERE` per scope, in one transaction:
the row's tokens refill by the seconds since its stamp (the database's clock, so replicas'
clocks never disagree), and one is taken only if one is there; when any scope has none the
transaction rolls back and nothing is spent. The principal is stored as a hash of its key.
Blocking (the meter runs it in a worker thread); a store that cannot be reached raises
`StoreError`, and the meter counts in this process instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from router.store.postgres.connections import Connections  # psycopg: the postgres extra

_TAKE = """
INSERT INTO mcp_router_quota_buckets AS b (namespace, principal, scope, tokens, stamp)
VALUES (%(namespace)s, %(principal)s, %(scope)s, %(capacity)s - 1,
        extract(epoch FROM clock_timestamp()))
ON CONFLICT (namespace, principal, scope) DO UPDATE SET
    tokens = LEAST(%(capacity)s::double precision,
                   b.tokens + (extract(epoch FROM clock_timestamp()) - b.stamp) * %(rate)s) - 1,
    stamp = extract(epoch FROM clock_timestamp())
WHERE LEAST(%(capacity)s::double precision,
            b.tokens + (extract(epoch FROM clock_timestamp()) - b.stamp) * %(rate)s) >= 1
RETURNING tokens
"""
_LEFT = """
SELECT LEAST(%(capacity)s::double precision,
             tokens + (extract(epoch FROM clock_timestamp()) - stamp) * %(rate)s)
FROM mcp_router_quota_buckets
WHERE namespace = %(namespace)s AND principal = %(principal)s AND scope = %(scope)s
"""


class _Short(Exception):
    """A scope had no token: roll the transaction back."""

    def __init__(self, index: int, tokens: float) -> None:
        self.index, self.tokens = index, tokens


class SharedBuckets:
    """The token buckets of one namespace of the shared store."""

    def __init__(self, connections: Connections, namespace: str) -> None:
        self._connections = connections
        self.namespace = namespace

    def take(self, principal: str, scopes: Sequence[tuple[str, int]]) -> tuple[int, float] | None:
        """One token from each `(scope, calls_per_minute)` bucket of `principal`, all or
        none; None when taken, else the index of the first scope without one and the tokens
        it holds (a fraction of one)."""
        who = hashlib.sha256(principal.encode("utf-8")).hexdigest()
        with self._connections.connection() as connection:
            try:
                with connection.transaction():
                    for index, (scope, per_minute) in enumerate(scopes):
                        values = {
                            "namespace": self.namespace,
                            "principal": who,
                            "scope": scope,
                            "capacity": float(per_minute),
                            "rate": per_minute / 60.0,
                        }
                        if connection.execute(_TAKE, values).fetchone() is None:
                            row = connection.execute(_LEFT, values).fetchone()
                            raise _Short(index, float(row[0]) if row else 0.0)
            except _Short as short:
                return short.index, short.tokens
        return None
