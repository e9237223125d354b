"""The races of a config applied while serving (`router.server.lifecycle.reload`), tried as a client
would: a call made the moment a reload denies its tool, or removes its server, while the index
is still being rebuilt; and a handshake twin dropped before its task began.

The front runs in the test's event loop (`tests.support.http_serving.http_front`) with real upstream
processes and a real edited config file. The rebuild is held on purpose: the embedder waits
for the test at the rebuild's first embedding (`HeldRebuilds`), so the old index stays
in place for as long as the test needs it. Each wait is an event, bounded by `fail_after`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from router.config import RemoteServer, load_config
from router.core.errors import UpstreamUnavailable
from router.embedding.base import Vectors
from router.embedding.hashing import HashingEmbedder
from router.server.lifecycle.state import RouterState
from router.upstream.connection.twins import HandshakeTwins
from router.upstream.state import UpstreamState
from router.upstream.upstream import Upstream
from tests.config.test_config_reload import rewrite
from tests.support.http_serving import http_front, streamable_client, until_indexed
from tests.support.serving import script, write_config
from tests.upstream.test_lazy_upstreams import lazy_server

pytestmark = pytest.mark.processes

LIMIT = 60
ALPHA_TOOLS = [
    {"name": "find_alpha", "description": "Find alpha records by keyword."},
    {"name": "drop_alpha", "description": "Drop every alpha record."},
]


class HeldRebuilds(HashingEmbedder):
    """The hashing embedder, whose next rebuild can be held: after `hold()` the next batch
    of tool texts waits for `release()`. Held, it names itself another model, so no vector
    is in the cache and the rebuild does embed (as when the model is swapped)."""

    def __init__(self) -> None:
        super().__init__()
        self._round = 0
        self._gate = threading.Event()
        self._gate.set()
        self.entered = threading.Event()
        """Set when a rebuild is waiting at the gate."""

    @property
    def model_id(self) -> str:
        return f"{super().model_id}-round-{self._round}"

    def hold(self) -> None:
        self._round += 1
        self.entered.clear()
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not self._gate.is_set():
            self.entered.set()
            assert self._gate.wait(LIMIT)
        return super().embed_documents(texts)


async def until(state: RouterState, done: Callable[[], bool]) -> None:
    """Until `done()`, checked at every change of the state (a swap, a status, a reload)."""
    while not done():
        await state.changes.wait()


async def rebuild_held(embedder: HeldRebuilds) -> None:
    """Until the rebuild waits at the embedder's gate (a thread's event: waited in a thread)."""
    assert await anyio.to_thread.run_sync(embedder.entered.wait, LIMIT)


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error, result
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_a_tool_denied_by_a_reload_is_refused_while_the_index_still_holds_it(
    tmp_path: Path,
) -> None:
    """The attack: call a tool in the moments after the config that denies it was adopted,
    before the index is rebuilt without it (before: it ran)."""
    servers = {"alpha": lazy_server(tmp_path / "alpha", ALPHA_TOOLS)}
    path = write_config(tmp_path, servers)
    embedder = HeldRebuilds()
    refusals: list[MCPError] = []
    async with (
        http_front(
            load_config(path), embedder=embedder, read_config=lambda: load_config(path)
        ) as front,
        streamable_client(front.mcp, mode="legacy") as legacy,
        streamable_client(front.mcp) as modern,
    ):
        state = front.state
        with anyio.fail_after(LIMIT):
            await until_indexed(state)
            before = await legacy.call_tool("alpha__drop_alpha", {"text": "x"})
            embedder.hold()
            rewrite(path, servers, policy={"deny": ["alpha/drop_alpha"]})
            await until(state, lambda: bool(state.settings.policy.deny))
            await rebuild_held(embedder)
            still_indexed = state.snapshot.catalog.get("alpha__drop_alpha") is not None
            for client in (legacy, modern):
                for name, arguments in (
                    ("alpha__drop_alpha", {"text": "x"}),
                    ("call_tool", {"name": "alpha__drop_alpha", "arguments": {"text": "x"}}),
                ):
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool(name, arguments)
                    refusals.append(refused.value)
            allowed = await modern.call_tool("alpha__find_alpha", {"text": "x"})
            embedder.release()
            await until(state, lambda: state.snapshot.catalog.get("alpha__drop_alpha") is None)
            with pytest.raises(MCPError) as after:
                await legacy.call_tool("alpha__drop_alpha", {"text": "x"})

    assert before.is_error is False
    assert still_indexed  # the rebuild was held: the old index still listed the tool
    assert len(refusals) == 4
    for refusal in [*refusals, after.value]:
        assert refusal.code == types.INVALID_PARAMS
        assert "denied by router.policy.deny 'alpha/drop_alpha'" in refusal.message
    assert allowed.is_error is False


async def test_a_tool_a_reloaded_profile_hides_is_unknown_at_once(tmp_path: Path) -> None:
    """`router.profiles` applies live: a request without identities gets the `default`
    profile, and a tool it stops covering is unknown from the moment the file is adopted."""
    servers = {"alpha": lazy_server(tmp_path / "alpha", ALPHA_TOOLS)}
    path = write_config(tmp_path, servers)
    embedder = HeldRebuilds()
    async with (
        http_front(
            load_config(path), embedder=embedder, read_config=lambda: load_config(path)
        ) as front,
        streamable_client(front.mcp) as client,
    ):
        state = front.state
        with anyio.fail_after(LIMIT):
            await until_indexed(state)
            embedder.hold()
            rewrite(path, servers, profiles={"default": {"allow": ["alpha/find_alpha"]}})
            await until(state, lambda: bool(state.settings.visibility.profiles))
            await rebuild_held(embedder)
            with pytest.raises(MCPError) as refused:
                await client.call_tool("alpha__drop_alpha", {"text": "x"})
            allowed = await client.call_tool("alpha__find_alpha", {"text": "x"})
            embedder.release()

    assert refused.value.code == types.INVALID_PARAMS
    assert refused.value.message.startswith("unknown tool 'alpha__drop_alpha'")
    assert allowed.is_error is False


async def test_a_server_removed_with_calls_in_flight_is_unavailable_never_an_internal_error(
    tmp_path: Path,
) -> None:
    """The attack: keep calling a server while a reload removes it (before: a call in the
    moments between the pool dropping it and the index forgetting its tools was an unknown
    tool for a handshake host and -32603, a `KeyError`, for a 2026-07-28 one)."""
    servers = {
        "alpha": lazy_server(tmp_path / "alpha", ALPHA_TOOLS),
        "reporting": script("reporting"),
    }
    path = write_config(tmp_path, servers)
    embedder = HeldRebuilds()
    progressed = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progressed.set()

    results: dict[str, types.CallToolResult] = {}
    async with (
        http_front(
            load_config(path), embedder=embedder, read_config=lambda: load_config(path)
        ) as front,
        streamable_client(front.mcp, mode="legacy") as legacy,
        streamable_client(front.mcp) as modern,
    ):
        state = front.state
        with anyio.fail_after(LIMIT):
            await until_indexed(state)

            async def in_flight() -> None:
                results["in flight"] = await modern.call_tool(
                    "reporting__long_job",
                    {"seconds": 600, "every": 0.05},
                    progress_callback=on_progress,
                )

            async with anyio.create_task_group() as group:
                group.start_soon(in_flight)
                await progressed.wait()  # the upstream is working on it
                embedder.hold()
                rewrite(path, {"alpha": servers["alpha"]})
            await rebuild_held(embedder)
            still_indexed = state.snapshot.catalog.get("reporting__long_job") is not None
            arguments = {"seconds": 1, "every": 0.5}
            results["legacy"] = await legacy.call_tool("reporting__long_job", arguments)
            results["modern"] = await modern.call_tool("reporting__long_job", arguments)
            embedder.release()
            await until(state, lambda: state.snapshot.catalog.get("reporting__long_job") is None)

    assert still_indexed
    for result in results.values():
        assert "upstream 'reporting'" in error_text(result)
    assert "removed from the config while serving" in error_text(results["legacy"])
    assert "removed from the config while serving" in error_text(results["modern"])


async def test_the_pool_names_a_removed_server_for_resources_and_prompts_too(
    tmp_path: Path,
) -> None:
    """Reads, prompts and completions find their upstream by name (`UpstreamPool.upstream`):
    one a reload removed is `UpstreamUnavailable` naming it, never a `KeyError`."""
    servers = {"alpha": lazy_server(tmp_path / "alpha", ALPHA_TOOLS)}
    path = write_config(tmp_path, {**servers, "beta": lazy_server(tmp_path / "beta")})
    async with http_front(load_config(path), read_config=lambda: load_config(path)) as front:
        state = front.state
        with anyio.fail_after(LIMIT):
            await until_indexed(state)
            rewrite(path, servers)
            await until(state, lambda: "beta" not in state.pool.upstreams)
            failures = []
            for attempt in (
                lambda: state.pool.read_resource("beta", "file:///x"),
                lambda: state.pool.get_prompt("beta", "p"),
                lambda: state.pool.call_tool("beta", "ping_me"),
            ):
                with pytest.raises(UpstreamUnavailable) as failed:
                    await attempt()
                failures.append(failed.value)
            with pytest.raises(UpstreamUnavailable) as never:
                state.pool.upstream("never-configured")

    for failure in failures:
        assert failure.upstream == "beta"
        assert "removed from the config while serving" in str(failure)
    assert "not in the config being served" in str(never.value)


class _Twin:
    """What a twin's task touches: `run`, and its first attempt's state."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = UpstreamState.CONNECTING
        self.connecting = anyio.Event()
        """Set once `run` got past its first checkpoint: it would be opening a connection."""

    async def run(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.connecting.set()
        await anyio.sleep_forever()

    async def wait_settled(self) -> None:
        await anyio.sleep_forever()


class _Primary:
    """A remote upstream set to `protocol: auto`, live on 2026-07-28."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.server = RemoteServer.model_validate({"url": "http://127.0.0.1:9/mcp"})
        self.speaks_modern = True

        class _Timeouts:
            connect = LIMIT

        self.timeouts = _Timeouts()


class _LateGroup:
    """A task group whose `start_soon` only notes the task: the test starts it later, to
    stand for the scheduler running it after whatever the test does first."""

    def __init__(self) -> None:
        self.noted: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self.asked = anyio.Event()

    def start_soon(self, func: Callable[..., Any], *args: Any, name: object = None) -> None:
        self.noted.append((func, args))
        self.asked.set()


async def test_a_twin_dropped_before_its_task_began_never_connects() -> None:
    """The race: a handshake host's request asks for a twin, and the upstream is removed or
    restarted (`drop`) before the twin's task has run its first step (before: the task
    registered its cancel scope after the drop, and the twin ran for the router's life)."""
    twin = _Twin("remote")
    late = _LateGroup()
    twins = HandshakeTwins(lambda primary: cast(Upstream, twin))
    twins.attach(cast(anyio.abc.TaskGroup, late))
    primary = cast(Upstream, _Primary("remote"))
    ended = anyio.Event()
    chosen: list[Upstream] = []

    async def ask() -> None:
        chosen.append(await twins.for_host(primary, True))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            await late.asked.wait()  # the twin's task is asked for, not yet started
            twins.drop("remote")
            [(func, args)] = late.noted

            async def task() -> None:
                try:
                    await func(*args)
                finally:
                    ended.set()

            group.start_soon(task)
            await ended.wait()
    assert not twin.connecting.is_set()
    assert chosen == [primary]  # the waiting request went on at the drop, on the primary
    assert twins.running == {}
