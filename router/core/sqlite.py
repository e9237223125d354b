"""The router's SQLite files in the cache folder (embeddings, usage pairs, nonces, tool pins):
one way to open them.

Each file is opened per use and made if absent, in WAL mode, so readers never block the one
writer and several router processes (one per host) can share one cache folder. A file that
says what a person did (which tools they approved, when they confirmed a call) is
`private`: made with mode 0600 in a folder only the owner may enter, before SQLite opens
it (SQLite gives its -wal and -shm files the same mode). sqlite3 loads on first use, in the
worker thread that opens a file, so `mcp-router --help` does not pay for it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

BUSY_SECONDS = 30.0
"""How long a statement waits for another process's lock, unless the caller says."""


def connect(
    path: Path,
    schema: str,
    *,
    timeout: float = BUSY_SECONDS,
    private: bool = False,
    check_same_thread: bool = True,
) -> sqlite3.Connection:
    """A connection to `path`, the file and its folder made if absent, WAL on and `schema`
    (one statement) applied; `private`, the file 0600 in a 0700 folder. Raises
    `sqlite3.Error` or `OSError`; a connection that fails after opening is closed."""
    import sqlite3

    if private:
        make_private(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=timeout, check_same_thread=check_same_thread)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(schema)
    except BaseException:
        connection.close()
        raise
    return connection


def make_private(path: Path) -> None:
    """`path` made with mode 0600 if absent (and set to it if others may read it), in a
    folder made with mode 0700 if absent."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
