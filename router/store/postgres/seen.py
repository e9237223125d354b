"""Served-day marking: which tools some replica still serves, and pruning the rest.

Beside each index table, `<table>_seen` holds the day a replica last served each tool
(`router.store.postgres.schema`). Each index build marks the catalog's tools, once a day per tool in
a process, and a live replica marks them all again periodically (`PostgresStore.touch`), so
another replica's pruning never takes a tool still in use. Rows no replica served for
`PRUNE_AFTER_DAYS` are deleted from the index table at the next mark.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from router.store.postgres.schema import seen_table

if TYPE_CHECKING:
    from router.store.postgres.connections import Connections

# The store's one logger, whichever of its parts writes: its lines read as they always have.
logger = logging.getLogger(__name__)

PRUNE_AFTER_DAYS = 7
"""Rows no replica served for this many days are deleted: tools gone from every upstream.
A live replica marks its rows every day (`touch`), however long it runs without a change."""


class ServedDays:
    """Marks a store's rows as served today, and remembers what it marked."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self._remembered: tuple[tuple[str, datetime.date] | None, set[str]] = (None, set())
        """The fingerprints marked as served today in which table (`remember`)."""

    def remember(self, table: str, fingerprints: Sequence[str], again: bool = False) -> None:
        """Rows of `fingerprints` served today; rows no replica served for
        `PRUNE_AFTER_DAYS` deleted (tools gone from every upstream: stale HNSW candidates).
        A rebuild skips what this process marked today already; `again` (the periodic touch)
        writes them all."""
        from psycopg import sql

        today = datetime.date.today()
        if again or self._remembered[0] != (table, today):
            self._remembered = ((table, today), set())
        done = self._remembered[1]
        fresh = [fp for fp in fingerprints if fp not in done]
        if not fresh:
            return  # once a day per tool is enough: a rebuild of a large catalog writes nothing
        seen = sql.Identifier(seen_table(table))
        with self._connections.connection() as connection, connection.transaction():
            connection.execute(
                sql.SQL(
                    "INSERT INTO {seen} AS s (fingerprint) SELECT unnest(%s::text[]) "
                    "ON CONFLICT (fingerprint) DO UPDATE SET last_seen = current_date "
                    "WHERE s.last_seen < current_date"
                ).format(seen=seen),
                (fresh,),
            )
            pruned = connection.execute(
                sql.SQL(
                    "WITH gone AS (DELETE FROM {seen} WHERE last_seen < current_date - %s "
                    "RETURNING fingerprint) "
                    "DELETE FROM {table} WHERE fingerprint IN (SELECT fingerprint FROM gone)"
                ).format(seen=seen, table=sql.Identifier(table)),
                (PRUNE_AFTER_DAYS,),
            ).rowcount
        done.update(fresh)
        if pruned:
            logger.info(
                "store %s: pruned %d tools no replica served for %d days",
                self._connections.where,
                pruned,
                PRUNE_AFTER_DAYS,
            )
