"""HAProxy on loopback with `deploy/haproxy.cfg`, for the multi-replica test.

The test runs the deployment's own file, unchanged: the addresses come from the environment
variables that file reads (`MCP_ROUTER_LB_BIND`, `MCP_ROUTER_REPLICA_1..3`, `ROUTER_TOKEN`).
HAProxy runs in the foreground (`-db`) as a child process; its log goes to a file beside it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "haproxy.cfg"
REPLICA_HEADER = "x-mcp-router-replica"
"""The response header naming the replica that answered (set by the config)."""
START_TIMEOUT = 30.0


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if Path(p).exists()), None
    )


def environment(bind: str, replicas: Sequence[str], token: str = "") -> dict[str, str]:
    """The variables `deploy/haproxy.cfg` reads: where to listen, the three replicas
    (`host:port`), and the replicas' bearer token (empty: none)."""
    if len(replicas) != 3:
        raise ValueError(f"deploy/haproxy.cfg names three replicas, not {len(replicas)}")
    env = {"MCP_ROUTER_LB_BIND": bind, "ROUTER_TOKEN": token}
    env.update({f"MCP_ROUTER_REPLICA_{n}": address for n, address in enumerate(replicas, 1)})
    return {**os.environ, **env}


def check_config(binary: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`haproxy -c`: parse and validate the config with these variables."""
    return subprocess.run(
        [binary, "-c", "-f", str(CONFIG)], env=env, capture_output=True, text=True, timeout=30
    )


@dataclass
class Balancer:
    """A running HAProxy: its URL, its log, and how to stop it."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGUSR1)  # soft stop: finish what is in flight
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _serving(url: str, names: set[str], process: subprocess.Popen[bytes], log: Path) -> None:
    """Until `/healthz` through the balancer has been answered 200 by every replica in `names`
    (round-robin: each turn asks the next one), within `START_TIMEOUT`."""
    deadline = time.monotonic() + START_TIMEOUT
    answered: set[str] = set()
    with httpx2.Client(timeout=5) as http:
        while not names <= answered:
            if process.poll() is not None:
                raise RuntimeError(f"haproxy exited ({process.returncode}):\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"haproxy did not reach {sorted(names - answered)} in {START_TIMEOUT} s:\n"
                    f"{log.read_text()}"
                )
            try:
                answer = http.get(f"{url}/healthz")
            except httpx2.TransportError:
                time.sleep(0.05)  # a child process offers no readiness event: poll its port
                continue
            if answer.status_code == 200:
                answered.add(answer.headers.get(REPLICA_HEADER, ""))


@contextmanager
def running_haproxy(
    replicas: Sequence[str], port: int, scratch: Path, token: str = ""
) -> Iterator[Balancer]:
    """HAProxy with `deploy/haproxy.cfg` on 127.0.0.1:`port` in front of `replicas`
    (`host:port`, three, already serving); yields once every replica answers through it."""
    binary = haproxy_binary()
    if binary is None:
        raise RuntimeError("no haproxy: apt-get install -y haproxy")
    env = environment(f"127.0.0.1:{port}", replicas, token)
    checked = check_config(binary, env)
    if checked.returncode != 0:
        raise RuntimeError(f"haproxy -c rejects {CONFIG}:\n{checked.stdout}{checked.stderr}")
    log_path = scratch / "haproxy.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [binary, "-db", "-f", str(CONFIG)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    balancer = Balancer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        names = {f"replica{n}" for n in range(1, len(replicas) + 1)}
        _serving(balancer.url, names, process, log_path)
        yield balancer
    finally:
        balancer.stop()
