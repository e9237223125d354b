"""`mcp-router serve --http` as a real child process: the token from `ROUTER_TOKEN`, a
clean stop on SIGTERM, and the refusal to bind beyond loopback without a token."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.support.http_serving import http_child, streamable_client, terminated, until_healthy
from tests.support.ports import free_port
from tests.support.serving import write_config
from tests.upstream import test_upstream_pool as upstream_tests
from tests.upstream.test_upstream_pool import Installed, first_text

pytestmark = pytest.mark.processes

installed = upstream_tests.installed


def serve_command(config: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "router", "serve", "--http", "--config", str(config), *options]


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ROUTER_TOKEN"}
    return {**env, **extra}


async def test_serving_beyond_loopback_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    with anyio.fail_after(30):
        done = await anyio.run_process(
            serve_command(config, "--host", "0.0.0.0", "--bm25-only"),
            check=False,
            env=environment(),
        )

    assert done.returncode == 2
    assert b"refusing to serve HTTP on 0.0.0.0 without a token" in done.stderr


async def test_the_http_front_serves_with_the_token_from_the_environment_and_stops_cleanly(
    installed: Installed, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"time": upstream_tests.time_server(installed)})
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    token = {"Authorization": "Bearer cli-token"}
    command = serve_command(config, "--port", str(port), "--bm25-only")
    env = environment(ROUTER_TOKEN="cli-token")
    async with http_child(command, tmp_path / "router.log", env) as process:
        async with httpx2.AsyncClient(base_url=url) as http:
            with anyio.fail_after(30):
                await until_healthy(http, token)
                refused = await http.get("/v1/tools")
                async with streamable_client(f"{url}/mcp", token) as client:
                    now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        code = await terminated(process)

    assert refused.status_code == 401
    assert '"timezone": "UTC"' in first_text(now)
    log = (tmp_path / "router.log").read_text()
    # uvicorn shuts down gracefully, then re-raises the signal so the parent sees it
    assert code == -signal.SIGTERM
    assert "Application shutdown complete" in log
    assert "cli-token" not in log
