"""The upstream pool against real servers from PyPI and npm (see scripts/install-test-servers.sh).

Python upstreams built on mcp 2.3 (time, git) negotiate 2026-07-28; the npm ones speak the
handshake revisions, the archived github server only 2024-11-05. Two tiny scripts in
tests/upstreams/ play the servers no registry ships: one that never answers, one scripted.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from router.config import RouterConfig, parse_config
from router.core.catalog import ToolSpec
from router.core.errors import ToolNotFound, UpstreamTimeout, UpstreamUnavailable
from router.upstream import BackoffPolicy, ProtocolMemory, UpstreamPool, UpstreamState
from router.upstream.connection.negotiation import upstream_key
from tests.support.ports import free_port

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
SERVERS_DIR = Path(os.environ.get("MCP_ROUTER_SERVERS_DIR", ROOT / ".cache" / "servers"))
SCRIPTS = Path(__file__).resolve().parents[1] / "upstreams"
FAST_RETRY = BackoffPolicy(initial=0.1, jitter=0.0)
INSTALL_HINT = "run scripts/install-test-servers.sh to install the real upstream servers"


@dataclass(frozen=True)
class Installed:
    """Where the install script put each real server, as config entries."""

    node: str
    root: Path

    def npm(self, package: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        script = (
            self.root
            / "tests"
            / "node_modules"
            / "@modelcontextprotocol"
            / package
            / "dist"
            / "index.js"
        )
        return {"command": self.node, "args": [str(script), *args], "env": env or {}}

    def pypi(self, venv: str, entry: str, *args: str) -> dict[str, Any]:
        return {"command": str(self.root / venv / "bin" / entry), "args": list(args)}


@pytest.fixture(scope="session")
def installed() -> Installed:
    node = shutil.which("node")
    if node is None:
        pytest.skip(f"node is not on PATH; {INSTALL_HINT}")
    found = Installed(node=node, root=SERVERS_DIR)
    expected = [
        Path(found.npm(package)["args"][0])
        for package in ("server-everything", "server-memory", "server-github")
    ] + [
        Path(found.pypi("time", "mcp-server-time")["command"]),
        Path(found.pypi("git", "mcp-server-git")["command"]),
    ]
    missing = [path for path in expected if not path.exists()]
    if missing:
        pytest.skip(f"{missing[0]} is missing; {INSTALL_HINT}")
    return found


def time_server(installed: Installed) -> dict[str, Any]:
    return installed.pypi("time", "mcp-server-time")


def script(name: str, **settings: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SCRIPTS / f"{name}.py")], **settings}


def config(servers: dict[str, dict[str, Any]], **router: Any) -> RouterConfig:
    return parse_config({"mcpServers": servers, "router": router})


@asynccontextmanager
async def running(cfg: RouterConfig, **options: Any) -> AsyncIterator[UpstreamPool]:
    options.setdefault("backoff", FAST_RETRY)
    async with UpstreamPool(cfg, **options) as pool:
        yield pool


def tool_names(pool: UpstreamPool, server: str) -> set[str]:
    return {tool.name for tool in pool.upstream(server).tools}


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def child_pids(parent: int, marker: str) -> list[int]:
    """Processes whose parent is `parent` and whose command line holds `marker` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and marker.encode() in cmdline:
            pids.append(int(entry.name))
    return pids


async def test_pool_starts_pypi_and_npm_servers_together_and_lists_their_tools(
    installed: Installed, tmp_path: Path
) -> None:
    cfg = config(
        {
            "time": time_server(installed),
            "git": installed.pypi("git", "mcp-server-git", "--repository", str(ROOT)),
            "everything": installed.npm("server-everything", "stdio"),
            "memory": installed.npm(
                "server-memory", env={"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}
            ),
        }
    )
    async with running(cfg) as pool:
        with anyio.fail_after(20):
            statuses = await pool.wait_settled()

        assert {name: s.state for name, s in statuses.items()} == dict.fromkeys(
            ["time", "git", "everything", "memory"], UpstreamState.HEALTHY
        )
        assert statuses["time"].protocol_version == "2026-07-28"
        assert statuses["git"].protocol_version == "2026-07-28"
        assert statuses["everything"].protocol_version == "2025-11-25"
        assert "get_current_time" in tool_names(pool, "time")
        assert "git_status" in tool_names(pool, "git")
        assert "echo" in tool_names(pool, "everything")
        assert "create_entities" in tool_names(pool, "memory")
        spec = next(t for t in pool.upstream("time").tools if t.name == "get_current_time")
        assert spec.server == "time"
        assert spec.input_schema is not None and "timezone" in spec.input_schema["properties"]
        assert statuses["everything"].resource_count > 0 and statuses["everything"].prompt_count > 0


async def test_a_forwarded_call_returns_the_upstream_result_unchanged(installed: Installed) -> None:
    async with running(config({"time": time_server(installed)})) as pool:
        with anyio.fail_after(20):
            await pool.upstream("time").wait_for(UpstreamState.HEALTHY)
            result = await pool.call_tool("time", "get_current_time", {"timezone": "Asia/Tokyo"})
            failed = await pool.call_tool("time", "get_current_time", {"timezone": "Nowhere/Bogus"})
            with pytest.raises(MCPError) as unknown:
                await pool.call_tool("time", "no_such_tool", {})

    assert result.is_error is False
    assert result.structured_content is not None
    assert result.structured_content["timezone"] == "Asia/Tokyo"
    assert json.loads(first_text(result))["timezone"] == "Asia/Tokyo"
    assert failed.is_error is True
    assert "Nowhere/Bogus" in first_text(failed)
    assert unknown.value.code == types.INVALID_PARAMS


async def test_a_server_that_speaks_only_2024_11_05_works(installed: Installed) -> None:
    github = installed.npm("server-github", env={"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"})
    async with running(config({"github": github})) as pool:
        with anyio.fail_after(20):
            status = await pool.upstream("github").wait_for(UpstreamState.HEALTHY)

    assert status.protocol_version == "2024-11-05"
    assert status.tool_count == 26
    assert "create_issue" in {t.name for t in pool.upstream("github").tools}


async def test_a_killed_upstream_fails_fast_while_the_others_work_and_comes_back(
    installed: Installed, tmp_path: Path
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("finds the child through /proc")
    memory_file = str(tmp_path / "m.jsonl")
    cfg = config(
        {
            "time": time_server(installed),
            "memory": installed.npm("server-memory", env={"MEMORY_FILE_PATH": memory_file}),
        }
    )
    async with running(cfg) as pool:
        memory = pool.upstream("memory")
        with anyio.fail_after(20):
            await pool.wait_settled()
            assert memory.state is UpstreamState.HEALTHY
            (pid,) = await anyio.to_thread.run_sync(child_pids, os.getpid(), "server-memory")

            os.kill(pid, signal.SIGKILL)
            await memory.wait_for(UpstreamState.UNHEALTHY, UpstreamState.CONNECTING)
            with pytest.raises(UpstreamUnavailable) as down:
                await pool.call_tool("memory", "read_graph", {})
            alive = await pool.call_tool("time", "get_current_time", {"timezone": "UTC"})

            status = await memory.wait_for(UpstreamState.HEALTHY)
            back = await pool.call_tool("memory", "read_graph", {})

    assert down.value.upstream == "memory"
    assert alive.is_error is False
    assert status.attempts == 2
    assert back.is_error is False
    assert status.tool_count == 9


async def test_an_upstream_that_never_answers_is_marked_unhealthy_without_blocking_others(
    installed: Installed,
) -> None:
    cfg = config(
        {
            "silent": script("silent", timeouts={"connect": 1.5}),
            "time": time_server(installed),
        }
    )
    async with running(cfg, backoff=BackoffPolicy(initial=30)) as pool:
        with anyio.fail_after(20):
            await pool.upstream("time").wait_for(UpstreamState.HEALTHY)
            result = await pool.call_tool("time", "get_current_time", {"timezone": "UTC"})
            status = await pool.upstream("silent").wait_for(UpstreamState.UNHEALTHY)
            with pytest.raises(UpstreamUnavailable, match="connect timeout"):
                await pool.call_tool("silent", "anything", {})

    assert result.is_error is False
    assert status.last_error is not None and "1.5s connect timeout" in status.last_error
    assert status.retry_in is not None and status.retry_in > 20


async def test_list_changed_from_an_upstream_triggers_a_relist(installed: Installed) -> None:
    # server-everything sends notifications/tools/list_changed right after `initialized`.
    send, receive = anyio.create_memory_object_stream[tuple[str, tuple[ToolSpec, ...]]](10)

    async def on_tools_changed(server: str, tools: tuple[ToolSpec, ...]) -> None:
        send.send_nowait((server, tools))

    cfg = config({"everything": installed.npm("server-everything", "stdio")})
    with send, receive:
        async with running(cfg, on_tools_changed=on_tools_changed):
            with anyio.fail_after(20):
                first_server, _ = await receive.receive()
                second_server, second = await receive.receive()

    assert first_server == second_server == "everything"
    assert {t.name for t in second} >= {"echo", "get-sum"}
    assert all(t.server_description for t in second)  # from the server's instructions


async def test_a_modern_upstream_announces_tool_changes_on_its_listen_stream() -> None:
    # Under 2026-07-28 list changes come only on a `subscriptions/listen` stream.
    send, receive = anyio.create_memory_object_stream[tuple[str, ...]](10)

    async def on_tools_changed(server: str, tools: tuple[ToolSpec, ...]) -> None:
        send.send_nowait(tuple(t.name for t in tools))

    with send, receive:
        async with running(
            config({"growing": script("growing")}), on_tools_changed=on_tools_changed
        ) as pool:
            with anyio.fail_after(15):
                assert await receive.receive() == ("grow",)
                assert pool.upstream("growing").status.protocol_version == "2026-07-28"
                await pool.call_tool("growing", "grow", {})
                names: tuple[str, ...] = ()
                while "grown" not in names:
                    names = await receive.receive()
                result = await pool.call_tool("growing", "grown", {})

    assert first_text(result) == "grown"


async def test_progress_notifications_reach_the_caller(installed: Installed) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    cfg = config({"everything": installed.npm("server-everything", "stdio")})
    async with running(cfg) as pool:
        with anyio.fail_after(20):
            await pool.upstream("everything").wait_for(UpstreamState.HEALTHY)
            result = await pool.call_tool(
                "everything",
                "trigger-long-running-operation",
                {"duration": 0.2, "steps": 2},
                progress_callback=on_progress,
            )

    assert result.is_error is False
    assert seen == [1, 2]


async def test_a_cancelled_call_cancels_the_upstream_request() -> None:
    async with running(config({"scripted": script("scripted", protocol="legacy")})) as pool:
        with anyio.fail_after(10):
            await pool.upstream("scripted").wait_for(UpstreamState.HEALTHY)
            with anyio.move_on_after(0.2) as scope:
                await pool.call_tool("scripted", "hang", {})
            result = await pool.call_tool("scripted", "cancelled", {})

    assert scope.cancelled_caught
    assert len(json.loads(first_text(result))) == 1


async def test_a_call_without_an_answer_times_out_and_the_upstream_stays_usable() -> None:
    cfg = config({"scripted": script("scripted", protocol="legacy", timeouts={"call": 0.3})})
    async with running(cfg) as pool:
        with anyio.fail_after(10):
            await pool.upstream("scripted").wait_for(UpstreamState.HEALTHY)
            with pytest.raises(UpstreamTimeout):
                await pool.call_tool("scripted", "hang", {})
            with pytest.raises(MCPError) as failed:
                await pool.call_tool("scripted", "fail", {})

    assert failed.value.code == -32042
    assert pool.upstream("scripted").state is UpstreamState.STOPPED


async def test_tools_list_is_followed_through_every_page() -> None:
    async with running(config({"scripted": script("scripted", protocol="legacy")})) as pool:
        with anyio.fail_after(10):
            status = await pool.upstream("scripted").wait_for(UpstreamState.HEALTHY)

    assert status.tool_count == 6
    assert status.protocol_version == "2024-11-05"


async def test_a_remembered_legacy_protocol_skips_the_discover_probe(tmp_path: Path) -> None:
    # The scripted server ignores server/discover: probing would cost the SDK's 10 s wait,
    # more than this 5 s connect timeout.
    entry = script("scripted", timeouts={"connect": 5})
    cfg = config({"scripted": entry})
    memory = ProtocolMemory(tmp_path / "protocols.json")
    await memory.remember(upstream_key("scripted", cfg.servers["scripted"]), "legacy")

    async with running(cfg, memory=ProtocolMemory(tmp_path / "protocols.json")) as pool:
        with anyio.fail_after(10):
            status = await pool.upstream("scripted").wait_settled()

    assert status.state is UpstreamState.HEALTHY


async def test_a_negotiated_modern_protocol_is_remembered_for_the_reconnect(
    installed: Installed,
) -> None:
    cfg = config({"time": time_server(installed)})
    memory = ProtocolMemory()
    async with running(cfg, memory=memory) as pool:
        time = pool.upstream("time")
        with anyio.fail_after(20):
            await time.wait_for(UpstreamState.HEALTHY)
            time.restart()
            await time.wait_for(UpstreamState.UNHEALTHY, UpstreamState.CONNECTING)
            status = await time.wait_for(UpstreamState.HEALTHY)
            result = await pool.call_tool("time", "get_current_time", {"timezone": "UTC"})

    assert memory.recall(upstream_key("time", cfg.servers["time"])) == "2026-07-28"
    assert status.attempts == 2
    assert status.protocol_version == "2026-07-28"
    assert result.is_error is False


async def test_the_child_gets_a_minimal_environment_plus_its_configured_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ROUTER_TEST_SECRET", "do-not-leak")
    entry = script("scripted", protocol="legacy", env={"GREETING": "hello"})
    async with running(config({"scripted": entry})) as pool:
        with anyio.fail_after(10):
            await pool.upstream("scripted").wait_for(UpstreamState.HEALTHY)
            result = await pool.call_tool("scripted", "env", {})

    env = json.loads(first_text(result))
    assert env["GREETING"] == "hello"
    assert "PATH" in env
    assert "ROUTER_TEST_SECRET" not in env


async def test_the_child_stderr_goes_to_the_router_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="router.upstream.stderr")
    async with running(config({"scripted": script("scripted", protocol="legacy")})) as pool:
        with anyio.fail_after(10):
            await pool.upstream("scripted").wait_for(UpstreamState.HEALTHY)

    lines = [r.getMessage() for r in caplog.records if r.name == "router.upstream.stderr"]
    assert "[scripted] scripted upstream ready" in lines


async def test_excluded_tools_are_neither_listed_nor_callable(installed: Installed) -> None:
    cfg = config({"time": {**time_server(installed), "exclude": ["convert_time"]}})
    async with running(cfg) as pool:
        with anyio.fail_after(20):
            await pool.upstream("time").wait_for(UpstreamState.HEALTHY)
            with pytest.raises(ToolNotFound):
                await pool.call_tool("time", "convert_time", {})

    assert tool_names(pool, "time") == {"get_current_time"}


async def test_an_unknown_server_is_unavailable_and_named() -> None:
    async with running(config({"scripted": script("scripted", protocol="legacy")})) as pool:
        with pytest.raises(UpstreamUnavailable) as refused:
            await pool.call_tool("nowhere", "tool", {})
    assert refused.value.upstream == "nowhere"
    assert "not in the config being served" in str(refused.value)


@pytest.mark.parametrize(("mode", "path"), [("streamableHttp", "/mcp"), ("sse", "/sse")])
async def test_a_remote_upstream_is_reached_over_its_http_transport(
    installed: Installed, mode: str, path: str
) -> None:
    port = free_port()
    command = installed.npm("server-everything", mode)
    # The pool's retries cover the moments before the server listens: no readiness polling.
    server = await anyio.open_process(
        [command["command"], *command["args"]],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        cfg = config({"remote": {"url": f"http://127.0.0.1:{port}{path}"}})
        async with running(cfg) as pool:
            with anyio.fail_after(20):
                status = await pool.upstream("remote").wait_for(UpstreamState.HEALTHY)
                result = await pool.call_tool("remote", "echo", {"message": "over http"})
    finally:
        server.terminate()
        with anyio.fail_after(10):
            await server.aclose()

    assert status.transport == ("sse" if mode == "sse" else "streamable-http")
    assert status.tool_count >= 13
    assert first_text(result) == "Echo: over http"


async def test_progress_starts_the_call_timeout_again_up_to_call_max() -> None:
    """A long call that reports progress more often than `timeouts.call` is not cut; one that
    says nothing is cut at `call`; one that reports for ever is cut at `call_max`, with a
    message that names it."""
    timeouts = {"call": 0.8, "call_max": 2.5}
    cfg = config({"reporting": script("reporting", protocol="legacy", timeouts=timeouts)})
    async with running(cfg) as pool:
        with anyio.fail_after(30):
            await pool.upstream("reporting").wait_for(UpstreamState.HEALTHY)
            reports: list[float] = []

            async def seen(progress: float, total: float | None, message: str | None) -> None:
                reports.append(progress)

            done = await pool.call_tool(
                "reporting", "long_job", {"seconds": 1.8, "every": 0.2}, progress_callback=seen
            )
            with pytest.raises(UpstreamTimeout) as quiet:
                await pool.call_tool("reporting", "quiet_job", {"seconds": 2.0})
            with pytest.raises(UpstreamTimeout) as endless:
                await pool.call_tool("reporting", "long_job", {"seconds": 20, "every": 0.2})

    assert first_text(done) == "done after 9 steps" and len(reports) == 9
    assert "no answer within 0.8s" in str(quiet.value)
    assert "still running after 2.5s in all (timeouts.call_max)" in str(endless.value)
