"""The default paths never import PyTorch: `serve` (stdio and HTTP), `route`, `eval` and
`inspect` all run with torch and sentence-transformers made unimportable, and still rank
with the embedding model (dense scores in their answers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from router.upstream.connection.transport import HTTP_TIMEOUT
from tests.support.http_serving import http_child, terminated
from tests.support.ports import free_port
from tests.support.serving import NO_TORCH, raw_router, write_config
from tests.upstream import test_upstream_pool as upstream_tests
from tests.upstream.test_upstream_pool import Installed

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

installed = upstream_tests.installed

STARTUP_WAIT = 60
"""The router's start-up wait (`timeouts.connect`) in these tests: a search waits for the
model and the time server that long, enough for a loaded machine (the default is 10 s)."""


def served(installed: Installed, tmp_path: Path) -> Path:
    """A config of the time server, with the start-up wait `STARTUP_WAIT`."""
    servers = {"time": upstream_tests.time_server(installed)}
    return write_config(tmp_path, servers, timeouts={"connect": STARTUP_WAIT})


def no_torch_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *NO_TORCH, *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        check=False,
    )


def test_route_runs_the_model_without_torch(tmp_path: Path) -> None:
    done = no_torch_cli(
        "route",
        "--catalog",
        str(EXAMPLES / "catalog.jsonl"),
        "--cache-dir",
        str(tmp_path),
        "--json",
        "what time is it in Tokyo",
    )
    assert done.returncode == 0, done.stderr
    assert "FORBIDDEN IMPORT" not in done.stderr
    top = json.loads(done.stdout)["tools"][0]
    assert top["name"] == "time__get_current_time"
    assert top["dense_score"] is not None


def test_eval_runs_the_model_without_torch(tmp_path: Path) -> None:
    report = tmp_path / "eval.json"
    done = no_torch_cli(
        "eval",
        "--catalog",
        str(EXAMPLES / "catalog.jsonl"),
        "--queries",
        str(EXAMPLES / "queries.jsonl"),
        "--cache-dir",
        str(tmp_path),
        "--mode",
        "hybrid,dense",
        "--json",
        str(report),
    )
    assert done.returncode == 0, done.stderr
    assert "FORBIDDEN IMPORT" not in done.stderr
    runs = json.loads(report.read_text())["runs"]
    assert runs[1]["mode"] == "dense" and runs[1]["metrics"]["recall@10"] > 0.8


def test_inspect_runs_without_torch(installed: Installed, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"time": upstream_tests.time_server(installed)})
    done = no_torch_cli("inspect", "--config", str(config), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "FORBIDDEN IMPORT" not in done.stderr
    assert json.loads(done.stdout)["upstreams"][0]["tools"]


async def test_stdio_serve_ranks_with_the_model_without_torch(
    installed: Installed, tmp_path: Path
) -> None:
    config = served(installed, tmp_path)
    async with raw_router(config, bm25_only=False, launcher=NO_TORCH) as router:
        with anyio.fail_after(STARTUP_WAIT + 60):
            await router.initialize()
            found = await router.call("search_tools", {"query": "what time is it in Tokyo"})
            await router.finish()
    best = found["structuredContent"]["tools"][0]
    assert best["name"] == "time__get_current_time"
    log = (tmp_path / "router.log").read_text()
    assert "FORBIDDEN IMPORT" not in log
    assert "loading embedding model minilm-l6-tools" in log
    assert "BM25 only" not in log


async def test_http_serve_ranks_with_the_model_without_torch(
    installed: Installed, tmp_path: Path
) -> None:
    config = served(installed, tmp_path)
    port = free_port()
    config_args = ["--config", str(config)]
    command = [sys.executable, *NO_TORCH, "serve", "--http", "--port", str(port), *config_args]
    async with http_child(command, tmp_path / "router.log") as process:
        # the search waits for the model and the upstream: bounded by fail_after, not by
        # httpx's default 5 s read timeout
        address = f"http://127.0.0.1:{port}"
        async with httpx2.AsyncClient(base_url=address, timeout=HTTP_TIMEOUT) as http:
            with anyio.fail_after(STARTUP_WAIT + 60):
                while True:  # a child process offers no event to wait on: wait for its port
                    try:
                        routed = await http.post(
                            "/v1/route", json={"query": "what time is it in Tokyo", "k": 3}
                        )
                        break
                    except httpx2.ConnectError:
                        await anyio.sleep(0.1)
        await terminated(process)
    assert routed.status_code == 200, routed.text
    answer = routed.json()
    best = answer["results"][0]
    assert answer["mode"] == "hybrid" and answer["pending"] == []
    assert best["name"] == "time__get_current_time" and best["dense_score"] is not None
    assert "FORBIDDEN IMPORT" not in (tmp_path / "router.log").read_text()
