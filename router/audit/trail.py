"""The audit trail's writer: appends one sealed line per decision (`router.audit.chain`).

Every field of a line is bounded (`router.audit.bounds`), so no request makes one long.
Writes are blocking and serialised by a lock (callers run them in a worker thread); each is
flushed and fsynced before it returns, so a decision is on disk before its answer leaves.
Several processes may write one trail (the serving router, and `mcp-router secrets` or
`auth revoke` recording an operator's change beside it): each write holds `flock` on
`<name>.lock` beside the file, and a writer whose file was appended to or rotated by another
since its own last line reads the chain's last hash again first, so every line still carries
the hash of the line before it, whoever wrote that one.
The file is created 0600 and rotates by size: past `max_bytes` it is renamed to the next
`<stem>.NNNNNN<suffix>` and a new file goes on from the old one's last hash; beyond `keep`
rotated files the oldest are deleted. A write that fails (a full disk, an unwritable file)
raises `AuditUnavailable` and leaves the trail unhealthy until a write succeeds again: with
`required`, the router then refuses the calls it cannot record.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from router.audit.bounds import bounded
from router.audit.chain import (
    GENESIS,
    last_hash,
    line_hash,
    rotated_files,
    rotated_name,
    sealed_line,
)
from router.audit.export import emit
from router.core.errors import AuditUnavailable

logger = logging.getLogger(__name__)

LOCK_TIMEOUT = 10.0
"""Seconds a write waits for another process's write before the trail counts as unwritable."""


class AuditTrail:
    def __init__(
        self,
        path: Path,
        *,
        required: bool = True,
        max_bytes: int = 64 << 20,
        keep: int = 10,
        replica: str | None = None,
        fields: tuple[str, ...] = (),
    ) -> None:
        if max_bytes < 1 or keep < 0:
            raise ValueError("max_bytes must be positive and keep not negative")
        self.path = Path(path)
        self.required = required
        self.max_bytes = max_bytes
        self.keep = keep
        self.replica = replica or f"{os.uname().nodename}:{os.getpid()}"
        self.healthy = True
        self.failures = 0
        """Writes that failed, for `/metrics`."""
        self.written = 0
        self.fields = fields
        """Argument names recorded in clear (`router.audit.fields`)."""
        self.on_write: Callable[[bool], None] = lambda ok: None
        """Told of each write, whether it succeeded (`/metrics`)."""
        self._lock = threading.Lock()
        self._prev: str | None = None
        self._after: tuple[int, int] | None = None
        """The file's (inode, size) just after this writer's last line: anything else means
        another process wrote (or rotated) since, and `_prev` is read again."""

    def append(self, record: dict[str, Any]) -> None:
        """Seal `record` (with the time and replica) onto the trail (blocking), each of its
        fields cut to its bound (`router.audit.bounds`).

        Raises:
            AuditUnavailable: The line could not be written (the trail is unhealthy now).
        """
        stamped = {"time": round(time.time(), 3), "replica": self.replica, **bounded(record)}
        with self._lock:
            try:
                self._append(stamped)
            except OSError as exc:
                self.healthy = False
                self.failures += 1
                self.on_write(False)
                logger.error("audit trail %s: cannot write (%s)", self.path, exc.strerror or exc)
                raise AuditUnavailable(
                    f"the audit trail cannot be written ({exc.strerror or exc})"
                ) from None
            self.healthy = True
            self.written += 1
        self.on_write(True)

    def _append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        held = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _hold(held)
            self._append_held(record)
        finally:
            os.close(held)  # closing releases the flock

    def _append_held(self, record: dict[str, Any]) -> None:
        if self._prev is None or self._after != _identity(self.path):
            self._prev = last_hash(self.path) or self._rotated_last() or GENESIS
        line = sealed_line(record, self._prev)
        if self.path.is_file() and self.path.stat().st_size + len(line) > self.max_bytes:
            self._rotate()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        self._prev = line_hash(line)
        self._after = (after.st_ino, after.st_size)
        emit(line.decode("utf-8").rstrip("\n"))  # to OTel too, once it is on disk

    def _rotated_last(self) -> str | None:
        rotated = rotated_files(self.path)
        return last_hash(rotated[-1][1]) if rotated else None

    def _rotate(self) -> None:
        rotated = rotated_files(self.path)
        sequence = rotated[-1][0] + 1 if rotated else 1
        os.replace(self.path, rotated_name(self.path, sequence))
        for _, old in rotated[: max(0, len(rotated) + 1 - self.keep)]:
            old.unlink(missing_ok=True)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_ino, found.st_size)


def _hold(descriptor: int) -> None:
    """`flock` the trail's lock file, waiting at most LOCK_TIMEOUT for another writer.

    Raises:
        OSError: another process held it that long (the trail counts as unwritable).
    """
    deadline = time.monotonic() + LOCK_TIMEOUT
    pause = 0.001
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                held = f"another process held the trail's lock for {LOCK_TIMEOUT:.0f} s"
                raise OSError(held) from None
            time.sleep(pause)  # a worker thread's wait: flock has no timeout
            pause = min(pause * 2, 0.05)
