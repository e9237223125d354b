"""An upstream's own tasks passed through: a real HTTP front with identities in front of
`tests/upstreams/tasking.py` over streamable HTTP (an upstream on the SDK that runs its own
tasks, and refuses a `tasks/*` whose `Mcp-Name` is not its own id), and hosts speaking the
extension's wire."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from router.config import RouterConfig
from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import SCRIPTS, http_front, listening_upstream, until_ready
from tests.support.identity_provider import IdentityProvider, module_provider
from tests.support.ports import free_port
from tests.support.tasks_host import Host, Refused, until_logged

pytestmark = pytest.mark.processes
provider = module_provider
AUDIENCE = "https://router.test/mcp"


@asynccontextmanager
async def front(
    provider: IdentityProvider, tmp_path: Path, *, stdio: bool = False, **router: Any
) -> AsyncIterator[dict[str, Host]]:
    """A front serving `tasking` over streamable HTTP, and again as `quiet`, whose tasks are
    `never` (with `stdio`, `tasking` as the router's child alone); a host per principal,
    alice's also without the extension (`plain`)."""
    port, log = free_port(), str(tmp_path / "up.log")
    url = f"http://127.0.0.1:{port}/mcp"
    servers: dict[str, Any] = {"tasking": {"url": url}, "quiet": {"url": url, "tasks": "never"}}
    if stdio:
        servers = {
            "tasking": {"command": sys.executable, "args": [str(SCRIPTS / "tasking.py"), log]}
        }
    async with (
        nullcontext() if stdio else listening_upstream("tasking", "streamable-http", port, log)
    ):
        cfg = RouterConfig.model_validate(
            {
                "mcpServers": servers,
                "router": {
                    "cache_dir": str(tmp_path / "cache"),
                    "http": {"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
                    "audit": {"path": str(tmp_path / "trail.jsonl")},
                    **router,
                },
            }
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as running, httpx2.AsyncClient(timeout=20) as http:
            with anyio.fail_after(60):
                await until_ready(running.state)

            def host(who: str, **kwargs: Any) -> Host:
                return Host(http, running.mcp, provider.token(who, AUDIENCE), **kwargs)

            yield {
                "alice": host("alice"),
                "bob": host("bob"),
                "plain": host("alice", declares=False),
            }


def _own_id(log: Path, key: str) -> str:
    """The upstream's own id of the task it made for `key`."""
    for line in log.read_text("utf-8").splitlines():
        if line.startswith(f"task {key} "):
            return line.split()[-1]
    raise AssertionError(f"no task for {key}")


def _forged(task_id: str) -> str:
    """`task_id` with its sealed body claiming another upstream task, its MAC kept."""
    prefix, _, rest = task_id.partition("s1.")
    body, _, mac = rest.rpartition(".")
    claims = json.loads(base64.urlsafe_b64decode(body))
    claims["data"]["t"] = "up-0000000000000000"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode()
    return f"{prefix}s1.{forged}.{mac}"


async def test_an_upstreams_own_task_passes_through_polled_to_its_result_by_its_principal_only(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    log = tmp_path / "up.log"
    async with front(provider, tmp_path) as hosts:
        alice, bob, plain = hosts["alice"], hosts["bob"], hosts["plain"]
        with anyio.fail_after(60):
            task = await alice.call("tasking__job", {"key": "a"})
            assert (task["resultType"], task["status"]) == ("task", "working")
            assert isinstance(task["ttlMs"], int) and task["ttlMs"] <= 600_000
            task_id, own = task["taskId"], _own_id(log, "a")
            assert own not in task_id.split(".")  # wrapped: sealed, not the upstream's id
            working = await alice.get(task_id)  # Mcp-Name is the upstream's own id there
            assert (working["status"], working["taskId"]) == ("working", task_id)
            await until_logged(log, f"get {own}")

            # another principal, a forged id (another upstream task under alice's MAC), and
            # guessed ones find no task, and reach no upstream
            for method in ("tasks/get", "tasks/cancel", "tasks/update"):
                for who, which in (
                    (bob, task_id),
                    (alice, _forged(task_id)),
                    (alice, task_id[:-4] + "0000"),
                    (alice, "mcp-router.s1.e30.00"),
                ):
                    with pytest.raises(Refused) as refused:
                        await who.request(method, {"taskId": which})
                    assert refused.value.code == types.INVALID_PARAMS
            assert "cancelled a" not in log.read_text("utf-8")

            # a host that did not declare the extension, or a tool whose tasks are `never`:
            # the upstream is not told of it, and runs the call in its request
            synchronous = await plain.call("tasking__job", {"key": "sync"})
            assert synchronous["content"][0]["text"] == "done sync"
            await until_logged(log, "sync sync")
            kept = await alice.call("quiet__job", {"key": "never"})
            assert kept["content"][0]["text"] == "done never"
            await until_logged(log, "sync never")

            released = await alice.call("tasking__release", {"key": "a"})  # answered in it
            assert released["content"][0]["text"] == "released a"
            done = await alice.until(task_id, "completed")
            assert done["taskId"] == task_id
            assert done["result"]["content"][0]["text"] == "done a"

    records = [json.loads(line) for line in (tmp_path / "trail.jsonl").read_text().splitlines()]
    calls = [r for r in records if r["kind"] == "tool-call" and r["tool"].endswith("__job")]
    assert [(r["principal"]["sub"], r["outcome"]) for r in calls] == [
        ("alice", "task"),
        ("alice", "ran"),
        ("alice", "ran"),
    ]
    tasks = [r for r in records if r["kind"] == "task"]
    assert [(r["name"], r["outcome"]) for r in tasks] == [("tasking__job", "working")]
    assert all(task_id not in json.dumps(r) for r in records)


async def test_a_passed_through_task_is_cancelled_upstream_and_answered_with_tasks_update(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    log = tmp_path / "up.log"
    async with front(provider, tmp_path) as hosts:
        alice = hosts["alice"]
        with anyio.fail_after(60):
            task = await alice.call("tasking__job", {"key": "b"})
            ack = await alice.request("tasks/cancel", {"taskId": task["taskId"]})
            assert ack["resultType"] == "complete" and "status" not in ack
            await until_logged(log, "cancelled b")
            cancelled = await alice.get(task["taskId"])
            assert cancelled["status"] == "cancelled"

            asking = await alice.call("tasking__confirm", {"key": "d"})
            assert asking["status"] == "input_required"
            needs = await alice.get(asking["taskId"])
            assert needs["inputRequests"]["ok"]["method"] == "elicitation/create"
            answer = {"ok": {"action": "accept", "content": {"sure": True}}}
            params = {"taskId": asking["taskId"], "inputResponses": answer}
            ack = await alice.request("tasks/update", params)
            assert ack["resultType"] == "complete" and "status" not in ack
            confirmed = await alice.until(asking["taskId"], "completed")
            assert confirmed["result"]["content"][0]["text"] == "confirmed d"

    records = [json.loads(line) for line in (tmp_path / "trail.jsonl").read_text().splitlines()]
    tasks = [(r["name"], r["outcome"]) for r in records if r["kind"] == "task"]
    assert tasks == [
        ("tasking__job", "working"),
        ("tasking__job", "cancelled"),
        ("tasking__confirm", "input_required"),
    ]


async def test_an_upstream_over_stdio_passes_its_tasks_through_until_the_routers_ttl(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    log = tmp_path / "up.log"
    async with front(provider, tmp_path, stdio=True, tasks={"ttl_s": 3}) as hosts:
        alice, bob = hosts["alice"], hosts["bob"]
        with anyio.fail_after(60):
            task = await alice.call("tasking__job", {"key": "s"})
            assert task["status"] == "working"
            assert task["ttlMs"] == 3000  # the router's, shorter than the upstream's
            with pytest.raises(Refused) as refused:
                await bob.get(task["taskId"])
            assert refused.value.code == types.INVALID_PARAMS
            await alice.call("tasking__release", {"key": "s"})
            done = await alice.until(task["taskId"], "completed")
            assert done["result"]["content"][0]["text"] == "done s"
            await until_logged(log, f"get {_own_id(log, 's')}")
            assert done["ttlMs"] == 3000
            while True:  # past its ttl the id opens nothing, though the upstream keeps it
                try:
                    await alice.get(task["taskId"])
                except Refused as expired:
                    assert expired.code == types.INVALID_PARAMS
                    break
                await anyio.sleep(0.1)
