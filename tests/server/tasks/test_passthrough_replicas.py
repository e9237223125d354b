"""An upstream's own task passed through by two router replicas that share one PostgreSQL store
(and so the key that seals task ids): created on one, polled and cancelled on the other, as a
balancer without affinity would send them. Two `mcp-router serve --http` children in front of
one `tests/upstreams/tasking.py` over streamable HTTP; no identities (one principal); the
test picks the replica."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread
import httpx2
import pytest

from tests.support.http_serving import listening_upstream
from tests.support.ports import free_port
from tests.support.postgres import Postgres
from tests.support.replicas import (
    Replica,
    module_postgres,  # noqa: F401 (the postgres fixture)
    start_http_router,
)
from tests.support.serving import write_config
from tests.support.tasks_host import Host, until_logged

pytestmark = pytest.mark.processes


def _start(folder: Path, url: str, store: str) -> Replica:
    folder.mkdir()
    path = write_config(folder, {"tasking": {"url": url}}, store={"url": store})
    return start_http_router(folder.name, path)


async def test_a_task_created_on_one_replica_is_polled_and_cancelled_on_the_other(
    postgres: Postgres, tmp_path: Path
) -> None:
    port, log = free_port(), tmp_path / "up.log"
    url = f"http://127.0.0.1:{port}/mcp"
    async with listening_upstream("tasking", "streamable-http", port, str(log)):
        a = await anyio.to_thread.run_sync(_start, tmp_path / "a", url, postgres.url)
        try:
            b = await anyio.to_thread.run_sync(_start, tmp_path / "b", url, postgres.url)
            try:
                async with httpx2.AsyncClient(timeout=30) as http:
                    on_a, on_b = Host(http, f"{a.url}/mcp"), Host(http, f"{b.url}/mcp")
                    with anyio.fail_after(60):
                        task = await on_a.call("tasking__job", {"key": "r"})
                        assert (await on_b.get(task["taskId"]))["status"] == "working"
                        await on_b.call("tasking__release", {"key": "r"})
                        done = await on_b.until(task["taskId"], "completed")
                        assert done["result"]["content"][0]["text"] == "done r"

                        other = await on_b.call("tasking__job", {"key": "c"})
                        await on_a.request("tasks/cancel", {"taskId": other["taskId"]})
                        await until_logged(log, "cancelled c")
                        assert (await on_b.get(other["taskId"]))["status"] == "cancelled"
            finally:
                await anyio.to_thread.run_sync(b.stop)
        finally:
            await anyio.to_thread.run_sync(a.stop)
