"""The interface a store offers the index builder, and what it reports about itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from router.vectors.indexing import DenseIndexer

if TYPE_CHECKING:
    from router.approvals.sealing import NonceLedger
    from router.core.catalog import ToolRecord
    from router.pinning.backend import PinBackend
    from router.store.quota_buckets import SharedBuckets
    from router.store.records import Records
    from router.store.usage import PostgresUsage

StoreState = Literal["ok", "unreachable"]


@dataclass(frozen=True, slots=True)
class StoreStatus:
    """What `/healthz` says of the store."""

    kind: str
    state: StoreState
    search: str
    """How the current snapshot's dense signal searches: "exact" or "hnsw"."""
    embedded: int
    """Tools this process embedded since it started (0 on a replica whose store was full)."""
    from_store: int
    """Tools of the current snapshot whose vectors this process read instead of embedding."""
    error: str | None = None

    def as_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "kind": self.kind,
            "state": self.state,
            "search": self.search,
            "embedded": self.embedded,
            "from_store": self.from_store,
        }
        if self.error is not None:
            body["error"] = self.error
        return body


class VectorStore(DenseIndexer, Protocol):
    """Vectors for a catalog's tools, embedding only what the store lacks (blocking: the
    index builder calls it in a worker thread), and what serving asks of the store besides."""

    def status(self) -> StoreStatus: ...

    def touch(self, records: Sequence[ToolRecord]) -> None:
        """Say the catalog's tools are still served (a shared store prunes the others)."""
        ...

    def shared_secret(self, name: str) -> bytes | None:
        """A key every replica of this store reads alike (None: this process's own)."""
        ...

    def nonce_ledger(self) -> NonceLedger:
        """Where sealed states' nonces are spent: one ledger for every replica of this store
        (`router.store.nonces`); the same object on every call."""
        ...

    def pin_backend(self) -> PinBackend | None:
        """Where every replica of this store keeps the tool pins (None: the cache folder's
        file, `router.pinning.sqlite`)."""
        ...

    def records(self) -> Records | None:
        """Where every replica of this store keeps upstream credentials and listings
        (`router.store.shared_records`; None: the cache folder's files)."""
        ...

    def usage(self) -> PostgresUsage | None:
        """Where every replica of this store keeps usage pairs (`router.store.usage`; None:
        the cache folder's files)."""
        ...

    def quota_buckets(self) -> SharedBuckets | None:
        """Where every replica of this store counts `calls_per_minute` quotas
        (`router.store.quota_buckets`; None: each process counts its own)."""
        ...

    def close(self) -> None: ...
