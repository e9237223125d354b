"""`mcp-router serve` when upstreams misbehave: junk on their stdout and stderr, a kill in the
middle of a session, and one that never answers `initialize`.

The router runs as a child process (`--bm25-only`) and is spoken to in raw JSON-RPC lines,
so every byte it writes to stdout is seen.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest

from tests.support import serving
from tests.support.serving import (
    INSTALL_HINT,
    Installed,
    RawRouter,
    child_pids,
    pending_upstreams,
    raw_router,
    script,
    until_indexed,
    write_config,
)

pytestmark = pytest.mark.processes

installed = serving.installed


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


@pytest.fixture
def word_server(installed: Installed, tmp_path: Path) -> dict[str, Any]:
    """PyPI office-word-mcp-server: a real upstream that writes plain text to its stdout."""
    word = installed.pypi("word", "word_mcp_server")
    if not Path(word["command"]).exists():
        pytest.skip(f"office-word-mcp-server (optional) is missing; {INSTALL_HINT}")
    return {**word, "cwd": str(tmp_path)}


async def test_stdout_carries_only_json_rpc_while_upstreams_write_junk(
    installed: Installed, word_server: dict[str, Any], tmp_path: Path
) -> None:
    servers = {
        "word": word_server,
        "noisy": script("noisy"),  # junk on stdout before and between messages, and stderr
        "time": installed.pypi("time", "mcp-server-time"),
    }
    # Three upstreams start at once, the word server slowly (its imports): on a loaded
    # machine that takes more than the default connect timeout (10 s) and this test's
    # former 40 s; each upstream gets a minute, the whole two.
    config = write_config(tmp_path, servers, timeouts={"connect": 60})
    async with raw_router(config) as router:
        with anyio.fail_after(120):
            await router.initialize()
            await until_indexed(router.search_text)
            await router.result("tools/list")
            await router.result("tools/list", {"query": "list the word documents"})
            shout = await router.call("noisy__shout", {"text": "quiet please"})
            documents = await router.call(
                "call_tool",
                {"name": "word__list_available_documents", "arguments": {"directory": "."}},
            )
            now = await router.call("time__get_current_time", {"timezone": "UTC"})
            await router.send_line(b"not json either")
            lines = await router.finish()

    assert text_of(shout) == "QUIET PLEASE"
    assert documents["isError"] is False
    assert now["isError"] is False
    assert len(lines) >= 8  # initialize, search, 2 listings, 3 calls, the rejected line
    for line in lines:
        assert line.strip(), "an empty line on stdout"
        message = types.jsonrpc_message_adapter.validate_json(line)  # raises on anything else
        assert json.loads(line)["jsonrpc"] == "2.0", message
    log = await anyio.Path(tmp_path / "router.log").read_text(errors="replace")
    assert "[noisy] noisy junk on stderr: before any message" in log


def json_rpc_lines(lines: list[bytes]) -> list[dict[str, Any]]:
    """Every line the router wrote to stdout, each asserted to be one JSON-RPC 2.0 message."""
    messages = []
    for line in lines:
        assert line.strip(), "an empty line on stdout"
        types.jsonrpc_message_adapter.validate_json(line)  # raises on anything else
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", message
        messages.append(message)
    return messages


@pytest.mark.model
async def test_stdout_carries_only_json_rpc_with_the_real_model_while_upstreams_flood_stderr(
    tmp_path: Path,
) -> None:
    """The router as a host starts it (the model loads), in front of two upstreams written
    for this: `chatty` writes log lines, an unfinished line, bytes that are not UTF-8 and
    bursts of thousands of lines to its stderr; `noisy` writes junk to its stdout."""
    config = write_config(tmp_path, {"chatty": script("chatty"), "noisy": script("noisy")})
    async with raw_router(config, bm25_only=False) as router:
        with anyio.fail_after(90):
            await router.initialize()
            await until_indexed(router.search_text)
            listing = await router.result("tools/list")
            scoped = await router.result("tools/list", {"query": "flood the log", "k": 1})
            found = await router.call("search_tools", {"query": "repeat my words"})
            chat = await router.call("chatty__chat", {"text": "hello"})
            routed = await router.call(
                "call_tool", {"name": "chatty__chat", "arguments": {"text": "again"}}
            )
            flood = await router.call("chatty__burst", {"lines": 5000})
            shout = await router.call("noisy__shout", {"text": "quiet please"})
            await router.send_line(b"not json either")
            lines = await router.finish()

    messages = json_rpc_lines(lines)
    answered = [m["id"] for m in messages if "id" in m]
    assert len(answered) >= 10 and len(set(answered)) == len(answered)  # one answer each
    assert [t["name"] for t in listing["tools"]] == ["search_tools", "call_tool"]
    assert [t["name"] for t in scoped["tools"]] == ["chatty__burst", "search_tools", "call_tool"]
    assert found["isError"] is False
    assert [text_of(r) for r in (chat, routed, flood, shout)] == [
        "hello",
        "again",
        "wrote 5000 lines",
        "QUIET PLEASE",
    ]
    # The junk was diverted to the router's stderr (its log), not dropped.
    log = await anyio.Path(tmp_path / "router.log").read_text(errors="replace")
    assert "router.server.listing.index: embedded" in log  # the model ranked, not BM25 alone
    assert "BM25 only" not in log
    for junk in (
        "[chatty] chatty: WARNING a log line",
        "[chatty] chatty: \ufffd\ufffd not utf-8",
        "[chatty] chatty burst at start done after 10000 lines",
        "[chatty] chatty: a line left unfinished, finished by the first call",
        "[chatty] chatty call 2: chat(again)",
        "[chatty] \ufffd\ufffd binary \\x00 junk \\x1b[31m red",  # control codes escaped
        "[chatty] chatty burst on call line 004999",
        "[chatty] chatty burst on call done after 5000 lines",
        "[noisy] noisy junk on stderr: after a message",
    ):
        assert junk in log, junk


@pytest.fixture(scope="module")
async def faulty(
    installed: Installed, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RawRouter]:
    """A router in front of time (PyPI), memory (npm) and an upstream that never answers."""
    directory = tmp_path_factory.mktemp("faults")
    servers = {
        "time": installed.pypi("time", "mcp-server-time"),
        "memory": installed.npm(
            "server-memory", env={"MEMORY_FILE_PATH": str(directory / "memory.jsonl")}
        ),
        "silent": script("silent", timeouts={"connect": 2}),
    }
    async with raw_router(write_config(directory, servers)) as router:
        with anyio.fail_after(30):
            await router.initialize()
            await until_indexed(router.search_text, ["time", "memory"])
        yield router


async def test_an_upstream_that_never_answers_initialize_does_not_block_the_others(
    faulty: RawRouter,
) -> None:
    with anyio.fail_after(10):
        search = await faulty.search_text("what time is it")
        now = await faulty.call("time__get_current_time", {"timezone": "Europe/Paris"})
        graph = await faulty.call("memory__read_graph", {})

    assert pending_upstreams(search) == {"silent"}
    assert "time__get_current_time" in search
    assert now["isError"] is False
    assert json.loads(text_of(now))["timezone"] == "Europe/Paris"
    assert graph["isError"] is False


async def test_a_killed_upstream_gives_clear_errors_only_for_its_tools_and_comes_back(
    faulty: RawRouter,
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("finds the upstream's process through /proc")
    with anyio.fail_after(30):
        (pid,) = await anyio.to_thread.run_sync(child_pids, faulty.process.pid, "server-memory")
        os.kill(pid, signal.SIGKILL)
        down = await faulty.call("memory__read_graph", {})
        others = await faulty.call("time__get_current_time", {"timezone": "UTC"})

        # The pool restarts it after a backoff (~0.5 s); a client sees no event for that,
        # so it retries the call, as a model would.
        back = down
        while back["isError"]:
            await anyio.sleep(0.2)
            back = await faulty.call("memory__read_graph", {})
        (new_pid,) = await anyio.to_thread.run_sync(child_pids, faulty.process.pid, "server-memory")

    assert down["isError"] is True
    assert "upstream 'memory'" in text_of(down)
    assert others["isError"] is False
    assert json.loads(text_of(others))["timezone"] == "UTC"
    assert json.loads(text_of(back)) == {"entities": [], "relations": []}
    assert new_pid != pid
