"""Records that every replica of one store reads alike: small values by (kind, key), each
with a lock that holds across processes.

`Records` is the seam that upstream OAuth credentials (`router.upstream.auth.storage`) and
lazy upstreams' listings (`router.upstream.listing.cache`) are kept through. Two kinds of
place implement it:

- `FileRecords`, one machine's: `cache_dir/<kind>/<key>.json`, each file 0600 in a 0700
  folder, written whole to a temporary file and renamed into place (never readable by
  others for an instant); its lock is `flock` on `.<key>.lock` beside it, so two processes
  on one machine (the CLI and a serving router) take turns too.
- `PostgresRecords` (`router.store.shared_records`), the shared store's table
  `mcp_router_records`; its lock is a transaction-scoped advisory lock, released by the
  database if the replica holding it dies.

`locked(kind, key)` is for read-modify-write that must not interleave with another
process's: a rotating refresh token is spent once, by the replica holding the lock, and one
that waited re-reads the record instead of spending it again. Blocking throughout: call from
a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

from router.core.errors import StoreError

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
LOCK_TIMEOUT = 30.0
"""Seconds `locked` waits for another holder (a refresh is one HTTP exchange)."""
_LOCK_POLL = 0.05


class Held(Protocol):
    """One record while its lock is held: reads see every write committed before."""

    def get(self) -> bytes | None: ...

    def put(self, value: bytes) -> None: ...


class Records(Protocol):
    """Small values by (kind, key); `kind` and `key` are short safe names
    (`[A-Za-z0-9_.-]`, at most 200). Blocking; failures are `StoreError` or `OSError`."""

    @property
    def where(self) -> str:
        """The place, for messages (never a password)."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other replicas read these records (a store), not only this machine."""
        ...

    def get(self, kind: str, key: str) -> bytes | None: ...

    def put(self, kind: str, key: str, value: bytes) -> None: ...

    def delete(self, kind: str, key: str) -> bool:
        """Forget the record; whether there was one."""
        ...

    def locked(self, kind: str, key: str) -> AbstractContextManager[Held]:
        """The record under a lock that every process sharing these records respects, held
        until the block ends (at most `LOCK_TIMEOUT` s of waiting, then `StoreError`)."""
        ...


def check_name(kind: str, key: str) -> None:
    for name in (kind, key):
        if not _NAME.match(name):
            raise ValueError(f"not a record name: {name!r}")


class FileRecords:
    """Records as private files of one cache folder (the layout the router always had:
    `auth/<hash>.json`, `listings/<name>-<hash>.json`)."""

    shared = False

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir

    @property
    def where(self) -> str:
        return str(self.cache_dir)

    def path(self, kind: str, key: str) -> Path:
        check_name(kind, key)
        return self.cache_dir / kind / f"{key}.json"

    def get(self, kind: str, key: str) -> bytes | None:
        try:
            return self.path(kind, key).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, kind: str, key: str, value: bytes) -> None:
        write_private(self.path(kind, key), value)

    def delete(self, kind: str, key: str) -> bool:
        try:
            self.path(kind, key).unlink()
        except FileNotFoundError:
            return False
        return True

    @contextmanager
    def locked(self, kind: str, key: str) -> Iterator[Held]:
        path = self.path(kind, key)
        _private_folder(path.parent)
        descriptor = os.open(path.parent / f".{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise StoreError(
                            f"{path.parent}: another process held the lock of {key} for "
                            f"{LOCK_TIMEOUT:.0f} s"
                        ) from None
                    time.sleep(_LOCK_POLL)  # a worker thread's wait: flock has no timeout
            yield _HeldFile(self, kind, key)
        finally:
            os.close(descriptor)  # closing releases the flock


class _HeldFile:
    def __init__(self, records: FileRecords, kind: str, key: str) -> None:
        self._records, self._kind, self._key = records, kind, key

    def get(self) -> bytes | None:
        return self._records.get(self._kind, self._key)

    def put(self, value: bytes) -> None:
        self._records.put(self._kind, self._key, value)


def _private_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)


def write_private(path: Path, value: bytes) -> None:
    """Atomically, never readable by others for an instant: a 0600 temporary file in the
    0700 folder, then `os.replace`."""
    _private_folder(path.parent)
    descriptor, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(value)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
