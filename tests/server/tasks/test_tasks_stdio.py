"""Tasks on a stdio router: a 2026-07-28 host speaking raw JSON-RPC lines to a real
`mcp-router serve` child (no HTTP, so no `Mcp-Name`), with `tests/upstreams/gated.py` behind
it: the call becomes a task, a listen stream naming it hears it end, `tasks/get` reads the
result, and a request that does not declare the extension gets neither."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.support.http_serving import SCRIPTS
from tests.support.serving import raw_router, write_config
from tests.support.tasks_host import EXTENSION, VERSION, until_logged

pytestmark = pytest.mark.processes


def _meta(*, declares: bool = True) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {EXTENSION: {}}} if declares else {}
    return {
        types.PROTOCOL_VERSION_META_KEY: VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        types.CLIENT_CAPABILITIES_META_KEY: capabilities,
    }


async def test_a_modern_host_on_stdio_gets_a_task_hears_it_end_and_reads_its_result(
    tmp_path: Path,
) -> None:
    log = tmp_path / "gated.log"
    gated = {
        "command": sys.executable,
        "args": [str(SCRIPTS / "gated.py"), str(log)],
        "tasks": "always",
        "tools": {"release": {"tasks": "never"}},
    }
    async with raw_router(write_config(tmp_path, {"gated": gated}, mode="all")) as router:
        with anyio.fail_after(60):
            job = {"name": "gated__job", "arguments": {"key": "s"}}
            task = await router.result("tools/call", {**job, "_meta": _meta()})
            assert task["resultType"] == "task" and task["status"] == "working"
            task_id = task["taskId"]
            await until_logged(log, "started s")
            got = await router.result("tasks/get", {"taskId": task_id, "_meta": _meta()})
            assert got["status"] == "working"

            undeclared = await router.request(
                "tasks/get", {"taskId": task_id, "_meta": _meta(declares=False)}
            )
            assert undeclared["error"]["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY

            listen = {"notifications": {"taskIds": [task_id]}, "_meta": _meta()}
            await router.send(
                {
                    "jsonrpc": "2.0",
                    "id": "listen",
                    "method": "subscriptions/listen",
                    "params": listen,
                }
            )
            release = {"name": "gated__release", "arguments": {"key": "s"}, "_meta": _meta()}
            released = await router.result("tools/call", release)
            assert released["content"][0]["text"] == "released s"
            while not any(m.get("method") == "notifications/tasks" for m in router.notifications):
                router.notifications.append(await router.receive())
            methods = [m.get("method") for m in router.notifications]
            assert methods.index("notifications/subscriptions/acknowledged") < methods.index(
                "notifications/tasks"
            )
            told = next(m for m in router.notifications if m.get("method") == "notifications/tasks")
            assert (told["params"]["taskId"], told["params"]["status"]) == (task_id, "completed")

            done = await router.result("tasks/get", {"taskId": task_id, "_meta": _meta()})
            assert done["status"] == "completed"
            assert done["result"]["content"][0]["text"] == "done s"
            # without the extension declared, the same tool answers in its request
            await router.result("tools/call", {**release, "arguments": {"key": "plain"}})
            plain = {"name": "gated__job", "arguments": {"key": "plain"}}
            answer = await router.result("tools/call", {**plain, "_meta": _meta(declares=False)})
            assert "taskId" not in answer and answer["content"][0]["text"] == "done plain"
