"""`mcp-router serve` as a real child process, for the end-to-end tests of the routed server.

Two ways to talk to it: the SDK `Client` over stdio (what hosts use), and `RawRouter`, which
writes JSON-RPC lines itself, so a test controls every byte it sends and keeps every line
the router wrote to stdout.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext

from tests.upstream import test_upstream_pool as upstream_tests
from tests.upstream.test_upstream_pool import INSTALL_HINT, ROOT, Installed

__all__ = [
    "INSTALL_HINT",
    "NO_TORCH",
    "ROOT",
    "Installed",
    "RawRouter",
    "User",
    "child_pids",
    "example_servers",
    "initialize_request",
    "pending_upstreams",
    "raw_router",
    "router_parameters",
    "script",
    "search_text",
    "searched_names",
    "until_indexed",
    "write_config",
]

installed = upstream_tests.installed  # the shared fixture: skips when servers are missing
script = upstream_tests.script
child_pids = upstream_tests.child_pids

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
META_TOOLS = ["search_tools", "call_tool"]
_STARTING = re.compile(r"Not searched yet, still starting: ([^(]*) \(")
_DOWN = re.compile(r"Down, not searched: (\S+) \(")


def example_servers(installed: Installed, scratch: Path) -> dict[str, dict[str, Any]]:
    """The example set of real servers: time, git, fetch (PyPI); everything, memory,
    filesystem (npm)."""
    fetch = installed.pypi("fetch", "mcp-server-fetch")
    if not Path(fetch["command"]).exists():
        pytest.skip(f"{fetch['command']} is missing; {INSTALL_HINT}")
    shared = scratch / "shared"
    shared.mkdir(exist_ok=True)
    return {
        "time": upstream_tests.time_server(installed),
        "git": installed.pypi("git", "mcp-server-git", "--repository", str(ROOT)),
        "fetch": fetch,
        "everything": installed.npm("server-everything", "stdio"),
        "memory": installed.npm(
            "server-memory", env={"MEMORY_FILE_PATH": str(scratch / "memory.jsonl")}
        ),
        "filesystem": installed.npm("server-filesystem", str(shared)),
    }


@pytest.fixture(scope="module", name="inspector")
def inspector_cli(installed: Installed) -> Path:
    """The MCP Inspector's command (tests/package.json); skips where it is not installed.
    Import it into the module that asks for `inspector`."""
    path = installed.root / "tests" / "node_modules" / ".bin" / "mcp-inspector"
    if not path.exists():
        pytest.skip(f"{path} is missing; {INSTALL_HINT}")
    return path


def write_config(directory: Path, servers: dict[str, dict[str, Any]], **router: Any) -> Path:
    """A config file in `directory`; the embedding cache goes there too (tests stay hermetic)."""
    router.setdefault("cache_dir", str(directory / "cache"))
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers, "router": router}), encoding="utf-8")
    return path


NO_TORCH = [str(ROOT / "tests" / "support" / "no_torch.py")]
"""A launcher for `router_command`: the CLI with torch and sentence-transformers unimportable."""


def router_command(
    config: Path, *, bm25_only: bool = True, launcher: list[str] | None = None
) -> list[str]:
    """`mcp-router serve` as a host starts it; `bm25_only` skips loading the model."""
    start = launcher if launcher is not None else ["-m", "router"]
    command = [sys.executable, *start, "serve", "--config", str(config)]
    return [*command, "--bm25-only"] if bm25_only else command


def router_parameters(config: Path, *, bm25_only: bool = True) -> StdioServerParameters:
    """For the SDK `Client`: the router with the SDK's default (minimal) environment."""
    command, *args = router_command(config, bm25_only=bm25_only)
    return StdioServerParameters(command=command, args=args, cwd=config.parent)


class User:
    """The person at the host: answers the router's questions (elicitation) with `action`,
    and remembers them. Pass `user.elicitation` as the client's `elicitation_callback`."""

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.asked: list[str] = []

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action=self.action)  # type: ignore[arg-type]


def initialize_request(client: str, protocol: str = "2025-11-25") -> dict[str, Any]:
    """The JSON-RPC `initialize` request (id 1) that opens a session, from a client named
    `client`, asking for `protocol`."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "0"},
        },
    }


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def searched_names(result: types.CallToolResult) -> list[str]:
    """The qualified names a `search_tools` result ranks, best first."""
    assert result.structured_content is not None
    return [tool["name"] for tool in result.structured_content["tools"]]


def pending_upstreams(text: str) -> set[str]:
    """The upstreams a `search_tools` answer says it could not search: starting or down."""
    names = {name for name in _DOWN.findall(text)}
    match = _STARTING.search(text)
    if match:
        names |= {name.strip() for name in match.group(1).split(",")}
    return names


async def until_indexed(
    search: Callable[[], Awaitable[str]], servers: Collection[str] | None = None
) -> None:
    """Call `search` (a `search_tools` call giving its text) until none of `servers` (all, by
    default) is pending. Polling, because a search-mode router offers no event a client could
    wait on: its `tools/list` never changes. Bound it with `anyio.fail_after`."""
    while True:
        pending = pending_upstreams(await search())
        if not (pending if servers is None else pending & set(servers)):
            return
        await anyio.sleep(0.1)


async def search_text(client: Client, query: str = "status") -> str:
    return first_text(await client.call_tool("search_tools", {"query": query}))


class RawRouter:
    """A router child spoken to in raw JSON-RPC lines. Every line it writes to stdout is kept
    in `lines`; notifications that arrive while a request waits are kept in `notifications`."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.lines: list[bytes] = []
        self.notifications: list[dict[str, Any]] = []
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._last_id = 0

    async def send_line(self, line: bytes) -> None:
        await self._stdin.send(line + b"\n")

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_line(json.dumps(message).encode())

    async def receive_line(self) -> bytes:
        line = await self._stdout.receive_until(b"\n", 1 << 24)
        self.lines.append(line)
        return line

    async def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.receive_line())
        return message

    async def answer(self, request_id: object) -> tuple[dict[str, Any], bytes]:
        """The next response to `request_id` and its exact line; notifications are kept."""
        while True:
            line = await self.receive_line()
            message = json.loads(line)
            if "id" in message and message["id"] == request_id:
                return message, line
            self.notifications.append(message)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, request_id: int | None = None
    ) -> dict[str, Any]:
        """Send a request and return the whole response (`result` or `error`)."""
        if request_id is None:
            self._last_id += 1
            request_id = self._last_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        response, _ = await self.answer(request_id)
        return response

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.request(method, params)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        """The handshake: `initialize`, then `notifications/initialized`."""
        opening = initialize_request("raw-test-client", version)
        result = await self.result("initialize", opening["params"])
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.result("tools/call", {"name": name, "arguments": arguments})

    async def search_text(self, query: str = "status") -> str:
        result = await self.call("search_tools", {"query": query})
        text: str = result["content"][0]["text"]
        return text

    async def finish(self) -> list[bytes]:
        """Close stdin and read stdout to its end: everything the router ever wrote."""
        await self._stdin.aclose()
        while True:
            try:
                await self.receive_line()
            except anyio.IncompleteRead:
                break
        rest = self._stdout.buffer
        if rest:
            self.lines.append(rest)
        await self.process.wait()
        return self.lines


@asynccontextmanager
async def raw_router(
    config: Path, *, bm25_only: bool = True, launcher: list[str] | None = None
) -> AsyncIterator[RawRouter]:
    """Start the router on `config`; its log goes to `router.log` next to the config."""
    with (config.parent / "router.log").open("ab") as log:
        process = await anyio.open_process(
            router_command(config, bm25_only=bm25_only, launcher=launcher),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=config.parent,
        )
    router = RawRouter(process)
    try:
        yield router
    finally:
        await close_router(process, router.finish)


async def close_router(process: anyio.abc.Process, finish: Callable[[], Awaitable[object]]) -> None:
    """For a `finally`: let a stdio router end as a host ends it (`finish` closes its stdin
    and reads its output to the end) within 10 s, else kill it; shielded from cancellation."""
    with anyio.move_on_after(10, shield=True) as cleanup:
        if process.returncode is None:
            await finish()
    if cleanup.cancelled_caught:
        process.kill()
    with anyio.CancelScope(shield=True):
        await process.aclose()
