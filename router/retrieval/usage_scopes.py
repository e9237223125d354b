"""Usage feedback kept apart per principal: one principal's calls never lift a tool for
another.

Without identities (stdio: one user; a shared front that turned `router.learn` on) there is
one scope, `usage.sqlite3` in the cache folder. With identities each principal has its own
file under `usage/`, named by a hash of the principal (no identity in a file name), holding
at most `PRINCIPAL_PAIRS` pairs; at most `MAX_LOADED` principals' memories are held at once,
the least recently used dropped (its file stays, and loads again at its next search).

With a shared store (`SharedUsage`, handed in by the server: this package imports no store)
the scopes are rows of the store's table instead of files, keyed by (model, hash of the
principal), with the same bounds; a memory takes in what other replicas taught its scope
each time it is asked for (`UsageMemory.refresh`), so a principal's calls on one replica
lift the tool on every replica.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

from router.retrieval.usage import MAX_PAIRS, USAGE_FILE, UsageMemory, UsageRows

USAGE_FOLDER = "usage"
PRINCIPAL_PAIRS = 1_000
"""Pairs kept per principal (1.5 MiB of vectors at 384 dimensions)."""
MAX_LOADED = 16
SHARED_SCOPE = ""
"""The scope key of the one scope without identities (a principal's is a 32-digit hash)."""


class SharedUsage(Protocol):
    """The shared store's usage pairs (`router.store.usage.PostgresUsage`)."""

    def rows(self, model_id: str, scope: str) -> UsageRows:
        """One scope's pairs; `scope` is `SHARED_SCOPE` or `scope_key(principal)`."""
        ...


def scope_key(principal: str) -> str:
    """A principal's scope as it is named at rest: a hash, never the identity."""
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class UsageScopes:
    """The usage memory of each scope: `None` is the one shared scope, a string a
    principal's key (`router.profiles.Principal.key`). Thread-safe; `memory_for` may read a
    file or the store, so call it from a worker thread."""

    def __init__(
        self,
        model_id: str,
        cache_dir: Path | None,
        *,
        persist: bool = True,
        shared: SharedUsage | None = None,
    ) -> None:
        self.model_id = model_id
        self._dir = cache_dir if persist else None
        self._store = shared if persist else None
        self._shared: UsageMemory | None = None
        self._principals: OrderedDict[str, UsageMemory] = OrderedDict()
        self._lock = threading.Lock()

    def memory_for(self, principal: str | None) -> UsageMemory:
        memory = self._held(principal)
        memory.refresh()  # what another replica taught since (nothing to do for a file)
        return memory

    def _held(self, principal: str | None) -> UsageMemory:
        with self._lock:
            if principal is None:
                if self._shared is None:
                    self._shared = self._made(SHARED_SCOPE, MAX_PAIRS, self._shared_file())
                return self._shared
            memory = self._principals.get(principal)
            if memory is not None:
                self._principals.move_to_end(principal)
                return memory
            scope = scope_key(principal)
            memory = self._made(scope, PRINCIPAL_PAIRS, self._file_of(scope))
            self._principals[principal] = memory
            while len(self._principals) > MAX_LOADED:
                self._principals.popitem(last=False)
            return memory

    def _made(self, scope: str, max_pairs: int, path: Path | None) -> UsageMemory:
        if self._store is not None:
            rows = self._store.rows(self.model_id, scope)
            return UsageMemory(self.model_id, rows=rows, max_pairs=max_pairs)
        return UsageMemory(self.model_id, path, max_pairs=max_pairs)

    def _shared_file(self) -> Path | None:
        return self._dir / USAGE_FILE if self._dir is not None else None

    def _file_of(self, scope: str) -> Path | None:
        if self._dir is None or self._store is not None:
            return None
        folder = self._dir / USAGE_FOLDER
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder / f"{scope}.sqlite3"
