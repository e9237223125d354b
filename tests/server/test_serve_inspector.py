"""A real client from npm against `mcp-router serve`: the MCP Inspector CLI
(`@modelcontextprotocol/inspector`, 0.15.0 on node 20) starts the router itself over stdio.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import serving
from tests.support.serving import (
    META_TOOLS,
    Installed,
    inspector_cli,  # noqa: F401 (the inspector fixture)
    router_command,
    write_config,
)

pytestmark = pytest.mark.processes

installed = serving.installed


@pytest.fixture(scope="module")
def config(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("inspector")
    return write_config(directory, {"everything": installed.npm("server-everything", "stdio")})


async def run_inspector(inspector: Path, config: Path, *options: str) -> dict[str, Any]:
    # The Inspector's options come first: the router's own `--config` would be taken for
    # the Inspector's, and `--tool-arg` swallows every argument after it.
    command = [str(inspector), "--cli", *options, "--", *router_command(config)]
    with anyio.fail_after(60):
        done = await anyio.run_process(command, check=False, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    output: dict[str, Any] = json.loads(done.stdout)
    return output


async def test_the_inspector_cli_lists_the_meta_tools(inspector: Path, config: Path) -> None:
    listing = await run_inspector(inspector, config, "--method", "tools/list")

    assert [tool["name"] for tool in listing["tools"]] == META_TOOLS
    assert listing["tools"][0]["inputSchema"]["required"] == ["query"]


async def test_the_inspector_cli_calls_search_tools(inspector: Path, config: Path) -> None:
    result = await run_inspector(
        inspector,
        config,
        "--tool-arg",
        "query=echo a message",
        "--tool-name",
        "search_tools",
        "--method",
        "tools/call",
    )

    assert result["isError"] is False
    assert result["structuredContent"]["query"] == "echo a message"
    assert '"echo a message"' in result["content"][0]["text"]
