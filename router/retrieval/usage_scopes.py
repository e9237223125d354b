"""Usage feedback kept apart per principal: one principal's calls never lift a tool for
another.

Without identities (stdio: one user; a shared front that turned `router.learn` on) there is
one scope, `usage.sqlite3` in the cache folder. With identities each principal has its own
file under `usage/`, named by a hash of the principal (no identity in a file name), holding
at most `PRINCIPAL_PAIRS` pairs; at most `MAX_LOADED` principals' memories are held at once,
the least recently used dropped (its file stays, and loads again at its next search).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path

from router.retrieval.usage import USAGE_FILE, UsageMemory

USAGE_FOLDER = "usage"
PRINCIPAL_PAIRS = 1_000
"""Pairs kept per principal (1.5 MiB of vectors at 384 dimensions)."""
MAX_LOADED = 16


class UsageScopes:
    """The usage memory of each scope: `None` is the one shared scope, a string a
    principal's key (`router.profiles.Principal.key`). Thread-safe; `memory_for` may read a
    file, so call it from a worker thread."""

    def __init__(self, model_id: str, cache_dir: Path | None, *, persist: bool = True) -> None:
        self.model_id = model_id
        self._dir = cache_dir if persist else None
        self._shared: UsageMemory | None = None
        self._principals: OrderedDict[str, UsageMemory] = OrderedDict()
        self._lock = threading.Lock()

    def memory_for(self, principal: str | None) -> UsageMemory:
        with self._lock:
            if principal is None:
                if self._shared is None:
                    path = self._dir / USAGE_FILE if self._dir is not None else None
                    self._shared = UsageMemory(self.model_id, path)
                return self._shared
            memory = self._principals.get(principal)
            if memory is not None:
                self._principals.move_to_end(principal)
                return memory
            memory = UsageMemory(self.model_id, self._file_of(principal), max_pairs=PRINCIPAL_PAIRS)
            self._principals[principal] = memory
            while len(self._principals) > MAX_LOADED:
                self._principals.popitem(last=False)
            return memory

    def _file_of(self, principal: str) -> Path | None:
        if self._dir is None:
            return None
        folder = self._dir / USAGE_FOLDER
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return folder / f"{name}.sqlite3"
