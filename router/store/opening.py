"""The store a configuration asks for, opened."""

from __future__ import annotations

from router.config import RouterConfig
from router.core.errors import StoreError
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.store.base import VectorStore
from router.store.local import LocalStore


def open_store(config: RouterConfig) -> VectorStore:
    """`router.store`'s PostgreSQL, connected and migrated, else the local SQLite cache.

    Blocking (it connects): call it before the event loop starts, or in a worker thread.

    Raises:
        StoreError: The database cannot be reached in `connect_timeout` seconds, lacks
            pgvector, or holds a newer schema; or the `postgres` extra is not installed.
    """
    settings = config.router
    cache = EmbeddingCache(settings.cache_dir or default_cache_dir())
    if settings.store is None:
        return LocalStore(cache)
    try:
        from router.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise StoreError(
            f"router.store needs the PostgreSQL driver ({exc.name} is missing). "
            "Fix: pip install 'mcp-router[postgres]'"
        ) from exc
    store = settings.store
    # Unset tuning is the store's own default (router/store/postgres/tuning.py).
    tuning: dict[str, int] = {}
    if store.exact_max_tools is not None:
        tuning["exact_max_tools"] = store.exact_max_tools
    if store.ef_search is not None:
        tuning["ef_search"] = store.ef_search
    postgres = PostgresStore(
        store.url,
        namespace=store.namespace,
        search=store.search,
        **tuning,
        connect_timeout=store.connect_timeout,
        # A replica that has vectors in its own cache file fills the store with them.
        seed=cache if cache.path.exists() else None,
    )
    postgres.open()
    return postgres
