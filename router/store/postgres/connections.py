"""The shared store's connections: the pool, and its reconnection after a failure.

`Connections.open()` migrates the schema through one connection of its own, then opens a
pool. After a failure, uses fail at once for `retry_after` seconds (searches rank with BM25
alone) instead of each waiting out a connection attempt; then one thread at a time opens a
fresh pool, since the pool's own reconnection backs off for minutes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from router.core.errors import StoreError
from router.store.postgres.schema import migrate

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

# The store's one logger, whichever of its parts writes: its lines read as they always have.
logger = logging.getLogger(__name__)

_POOL_SIZE = 8
_CHECKOUT_TIMEOUT = 3.0
"""Seconds a search or an index build waits for a pooled connection."""
_RETRY_AFTER = 5.0
"""Once the store failed, uses within this many seconds fail at once (searches rank with
BM25 alone) instead of each waiting out a connection attempt."""
_RECONNECT_TIMEOUT = 2.0
"""Seconds one retry after a failure waits for the database."""
STATEMENT_TIMEOUT = "30s"
"""A search that takes longer has lost its database; say so instead of hanging."""


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return parts._replace(netloc=f"{user}{host}", query="").geturl()


class Connections:
    """One store's pool of connections and its reconnection policy; blocking throughout.
    Every message names the store by `where`, its URL without the password."""

    def __init__(self, url: str, *, ef_search: int, connect_timeout: float) -> None:
        self.url = url
        self.where = redact(url)
        self.ef_search = ef_search
        self.connect_timeout = connect_timeout
        self._pool: ConnectionPool[Any] | None = None
        self.retry_after = _RETRY_AFTER
        self._reopening = threading.Lock()
        self._error: str | None = None
        self._failed_at = 0.0

    @property
    def error(self) -> str | None:
        """Why the store last failed, until a use succeeds again (None: reachable)."""
        return self._error

    def open(self) -> None:
        """Connect, migrate the schema and open the pool; a clear `StoreError` if the
        database cannot be reached in `connect_timeout` seconds or is not usable."""
        import psycopg

        try:
            with psycopg.connect(
                self.url, connect_timeout=max(1, round(self.connect_timeout)), autocommit=True
            ) as connection:
                found = migrate(connection, self.where)
        except psycopg.Error as exc:
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        if found == 0:
            logger.info("store %s: schema created", self.where)
        self._pool = self._new_pool(self.connect_timeout)

    def _new_pool(self, timeout: float) -> ConnectionPool[Any]:
        """A pool holding one live connection (or a `StoreError` after `timeout` s)."""
        from psycopg_pool import ConnectionPool

        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=_POOL_SIZE,
            open=False,
            timeout=_CHECKOUT_TIMEOUT,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(timeout))},
            configure=self._configure,
            # A connection the database dropped (a restart) is found at checkout and replaced,
            # not handed to a search to fail.
            check=ConnectionPool.check_connection,
        )
        try:
            pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            pool.close(timeout=0)
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        return pool

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        from pgvector.psycopg import register_vector

        register_vector(connection)
        connection.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
        connection.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        # Past ef_search the scan goes on instead of stopping short of the depth asked for.
        connection.execute("SET hnsw.iterative_scan = relaxed_order")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; a database error ends as a `StoreError`, and the store
        counts as failed (`error`) until a use succeeds again."""
        import psycopg
        from psycopg_pool import PoolTimeout

        pool = self._usable_pool()
        try:
            with pool.connection() as connection:
                yield connection
        except psycopg.errors.LockNotAvailable as exc:
            # another replica holds a lock longer than this use waits: the store is up
            raise StoreError(f"store {self.where}: {_reason(exc)}") from exc
        except (psycopg.OperationalError, PoolTimeout) as exc:
            self._failed(exc)
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        except psycopg.Error as exc:
            self._failed(exc)
            raise StoreError(f"store {self.where}: {_reason(exc)}") from exc
        else:
            if self._error is not None:
                logger.info("store %s: reachable again", self.where)
            self._error = None

    def _usable_pool(self) -> ConnectionPool[Any]:
        """The pool; after a failure, a fresh one once `retry_after` has passed. The pool's
        own reconnection backs off for minutes, so a database that is back would wait for
        it; a new pool connects at once, or fails fast and the store stays down."""
        if self._pool is None:
            raise StoreError(f"store {self.where} is not open")
        if self._error is None:
            return self._pool
        down = StoreError(f"store {self.where} is unreachable: {self._error}")
        if time.monotonic() - self._failed_at < self.retry_after:
            raise down
        if not self._reopening.acquire(blocking=False):
            raise down  # another thread is trying: this search does not wait for it
        try:
            if self._error is None:
                return self._pool
            try:
                fresh = self._new_pool(_RECONNECT_TIMEOUT)
            except StoreError as exc:
                self._failed(exc)
                raise
            stale, self._pool = self._pool, fresh
            stale.close(timeout=0)
            return fresh
        finally:
            self._reopening.release()

    def _failed(self, exc: BaseException) -> None:
        if self._error is None:
            logger.error("store %s: %s", self.where, _reason(exc))
        self._error = _reason(exc)
        self._failed_at = time.monotonic()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
