"""Long calls as tasks (the 2026-07-28 tasks extension), on one router: a real HTTP front with
identities, real upstream processes (`tests/upstreams/gated.py`, whose jobs end when released
or cancelled, and `asking.py`, which elicits), and a host speaking the extension's wire."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from router.config import RouterConfig
from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import SCRIPTS, http_front, until_ready
from tests.support.identity_provider import IdentityProvider, module_provider
from tests.support.tasks_host import EXTENSION, Host, Refused, until_logged

pytestmark = pytest.mark.processes
provider = module_provider
AUDIENCE = "https://router.test/mcp"


@asynccontextmanager
async def front(
    provider: IdentityProvider, tmp_path: Path, gated_tasks: str = "always", **router: Any
) -> AsyncIterator[dict[str, Host]]:
    """A front serving `gated` (tasks `always`, but `release` never) and `asking` (reached
    over the handshake, tasks `always`); a host per principal, alice's also without the
    extension (`plain`), and carol's."""
    gated = {
        "command": sys.executable,
        "args": [str(SCRIPTS / "gated.py"), str(tmp_path / "gated.log")],
        "tasks": gated_tasks,
        "tools": {"release": {"tasks": "never"}},
    }
    asking = {
        "command": sys.executable,
        "args": [str(SCRIPTS / "asking.py")],
        "protocol": "legacy",
        "tasks": "always",
    }
    cfg = RouterConfig.model_validate(
        {
            "mcpServers": {"gated": gated, "asking": asking},
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
        elicits: dict[str, Any] = {"elicitation": {"form": {}}}

        def host(who: str, **kwargs: Any) -> Host:
            return Host(http, running.mcp, provider.token(who, AUDIENCE), **kwargs)

        yield {
            "alice": host("alice", capabilities=elicits),
            "bob": host("bob", capabilities=elicits),
            "carol": host("carol"),
            "plain": host("alice", declares=False),
        }


def _trail(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "trail.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


async def test_an_always_tool_runs_as_a_task_polled_to_its_result_by_its_principal_only(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    async with front(provider, tmp_path) as hosts:
        alice, bob, plain = hosts["alice"], hosts["bob"], hosts["plain"]
        with anyio.fail_after(60):
            discovered = await alice.request("server/discover", {})
            assert EXTENSION in discovered["capabilities"]["extensions"]
            assert "tasks" not in discovered["capabilities"]

            task = await alice.call("gated__job", {"key": "a"})
            assert task["resultType"] == "task"
            assert task["status"] == "working"
            assert {"taskId", "createdAt", "lastUpdatedAt"} <= set(task)
            assert isinstance(task["ttlMs"], int) and isinstance(task["pollIntervalMs"], int)
            assert not {"result", "error", "inputRequests", "requestState", "task"} & set(task)
            task_id = task["taskId"]
            working = await alice.get(task_id)
            assert (working["resultType"], working["status"]) == ("complete", "working")
            assert "result" not in working
            await until_logged(tmp_path / "gated.log", "started a")

            # another principal, and a guessed id, find no task
            for method in ("tasks/get", "tasks/cancel"):
                for who, which in ((bob, task_id), (alice, task_id[:-2] + "xx")):
                    with pytest.raises(Refused) as refused:
                        await who.request(method, {"taskId": which})
                    assert refused.value.code == types.INVALID_PARAMS
            # a request that did not declare the extension: no task methods, no task
            with pytest.raises(Refused) as undeclared:
                await plain.request("tasks/get", {"taskId": task_id})
            assert undeclared.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            data = undeclared.value.data
            assert data is not None and EXTENSION in data["requiredCapabilities"]["extensions"]
            await plain.call("gated__release", {"key": "sync"})
            synchronous = await plain.call("gated__job", {"key": "sync"})
            assert "taskId" not in synchronous
            assert synchronous["content"][0]["text"] == "done sync"
            # methods the extension does not have
            for gone in ("tasks/result", "tasks/list"):
                with pytest.raises(Refused) as missing:
                    await alice.request(gone, {"taskId": task_id})
                assert missing.value.code == types.METHOD_NOT_FOUND
            # over HTTP, Mcp-Name names the task of the body
            with pytest.raises(Refused) as mismatched:
                await alice.request("tasks/get", {"taskId": task_id}, name="another")
            assert (mismatched.value.status, mismatched.value.code) == (400, -32020)

            released = await alice.call("gated__release", {"key": "a"})
            assert released["content"][0]["text"] == "released a"
            done = await alice.until(task_id, "completed")
            assert done["result"]["content"][0]["text"] == "done a"
            assert not done["result"].get("isError")
            assert "_meta" not in done["result"] or not done["result"]["_meta"].get(
                "io.modelcontextprotocol/related-task"
            )
            # a tool's own error is a completed task whose result says so
            broken = await alice.call("gated__broken", {})
            failed = await alice.until(broken["taskId"], "completed")
            assert failed["result"]["isError"] is True

    records = [r for r in _trail(tmp_path) if r.get("principal", {}).get("sub") == "alice"]
    calls = [r for r in records if r["kind"] == "tool-call" and r["tool"] == "gated__job"]
    assert [r["outcome"] for r in calls] == ["task", "ran"]  # the task, then the plain call
    statuses = [r["outcome"] for r in records if r["kind"] == "task" and r["name"] == "gated__job"]
    assert statuses == ["working", "completed"]
    assert all(task_id not in json.dumps(r) for r in records)


async def test_a_required_tool_refuses_a_host_that_did_not_declare_the_extension(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    async with front(provider, tmp_path, gated_tasks="required") as hosts:
        alice, plain = hosts["alice"], hosts["plain"]
        with anyio.fail_after(60):
            with pytest.raises(Refused) as refused:
                await plain.call("gated__job", {"key": "plain"})
            assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            data = refused.value.data
            assert data is not None and EXTENSION in data["requiredCapabilities"]["extensions"]
            # its `never` tool still answers in the request; the declaring host gets a task
            await plain.call("gated__release", {"key": "a"})
            task = await alice.call("gated__job", {"key": "a"})
            assert task["resultType"] == "task"
            done = await alice.until(task["taskId"], "completed")
            assert done["result"]["content"][0]["text"] == "done a"
    assert "started plain" not in (tmp_path / "gated.log").read_text("utf-8").splitlines()


async def test_a_cancelled_task_cancels_its_upstream_call_and_gives_back_its_place(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    quotas = {"default": {"concurrent_calls": 1}}
    async with front(provider, tmp_path, quotas=quotas) as hosts:
        alice = hosts["alice"]
        log = tmp_path / "gated.log"
        with anyio.fail_after(60):
            task = await alice.call("gated__job", {"key": "c"})
            await until_logged(log, "started c")
            # the task's upstream call holds alice's one place in flight
            over = await alice.call("gated__release", {"key": "x"})
            assert over["isError"] is True and "mcp-router/quota" in over["_meta"]

            ack = await alice.request("tasks/cancel", {"taskId": task["taskId"]})
            assert ack == {"resultType": "complete", **{k: ack[k] for k in ack if k == "_meta"}}
            assert (await alice.get(task["taskId"]))["status"] == "cancelled"
            await until_logged(log, "cancelled c")
            assert "released c" not in log.read_text("utf-8")
            again = await alice.request("tasks/cancel", {"taskId": task["taskId"]})
            assert again["resultType"] == "complete" and "status" not in again
            while True:  # the place comes back once the upstream call has ended
                admitted = await alice.call("gated__release", {"key": "y"})
                if not admitted.get("isError"):
                    break
                await anyio.sleep(0.05)
    statuses = [r["outcome"] for r in _trail(tmp_path) if r["kind"] == "task"]
    assert statuses == ["working", "cancelled"]


async def test_an_elicitation_mid_task_is_answered_with_tasks_update(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    async with front(provider, tmp_path) as hosts:
        alice, bob = hosts["alice"], hosts["bob"]
        with anyio.fail_after(60):
            task = await alice.call("asking__ask_user", {"question": "Which colour?"})
            asked = await alice.until(task["taskId"], "input_required")
            (key, question), *others = asked["inputRequests"].items()
            assert others == []
            assert question["method"] == "elicitation/create"
            assert question["params"]["message"] == "Which colour?"
            answer = {key: {"action": "accept", "content": {"answer": "blue"}}}
            with pytest.raises(Refused) as refused:  # not bob's to answer
                await bob.request(
                    "tasks/update", {"taskId": task["taskId"], "inputResponses": answer}
                )
            assert refused.value.code == types.INVALID_PARAMS
            ack = await alice.request(
                "tasks/update", {"taskId": task["taskId"], "inputResponses": answer}
            )
            assert ack["resultType"] == "complete"
            done = await alice.until(task["taskId"], "completed")
            assert "blue" in done["result"]["content"][0]["text"]
    statuses = [r["outcome"] for r in _trail(tmp_path) if r["kind"] == "task"]
    assert statuses == ["working", "input_required", "working", "completed"]


async def test_an_auto_call_becomes_a_task_only_past_its_threshold_and_within_its_share(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    tasks = {"mode": "auto", "after_ms": 300, "per_principal": 1}
    async with front(provider, tmp_path, gated_tasks="auto", tasks=tasks) as hosts:
        alice = hosts["alice"]
        log = tmp_path / "gated.log"
        with anyio.fail_after(60):
            await alice.call("gated__release", {"key": "quick"})
            quick = await alice.call("gated__job", {"key": "quick"})
            assert "taskId" not in quick and quick["content"][0]["text"] == "done quick"

            long = await alice.call("gated__job", {"key": "long"})
            assert long["resultType"] == "task"
            assert (await alice.get(long["taskId"]))["status"] == "working"

            # alice's one running task is her share: another long call answers in its request
            answers: list[dict[str, Any]] = []

            async def second() -> None:
                answers.append(await alice.call("gated__job", {"key": "second"}))

            async with anyio.create_task_group() as group:
                group.start_soon(second)
                await until_logged(log, "started second")
                await alice.call("gated__release", {"key": "second"})
            assert "taskId" not in answers[0]
            assert answers[0]["content"][0]["text"] == "done second"

            await alice.call("gated__release", {"key": "long"})
            done = await alice.until(long["taskId"], "completed")
            assert done["result"]["content"][0]["text"] == "done long"


async def test_over_a_bound_an_always_call_is_refused_and_a_finished_task_makes_room(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    tasks = {"per_principal": 1, "max_tasks": 2}
    async with front(provider, tmp_path, tasks=tasks) as hosts:
        alice, bob, carol = hosts["alice"], hosts["bob"], hosts["carol"]
        with anyio.fail_after(60):
            first = await alice.call("gated__job", {"key": "a1"})
            # alice's share is one running task: another `always` call is refused, not run
            with pytest.raises(Refused) as share:
                await alice.call("gated__job", {"key": "a2"})
            assert share.value.code == types.INVALID_PARAMS
            assert "router.tasks.per_principal" in share.value.message
            bobs = await bob.call("gated__job", {"key": "b1"})  # bob's share is his own

            await alice.call("gated__release", {"key": "a1"})
            await alice.until(first["taskId"], "completed")
            # two kept (one finished): alice's next task takes the oldest finished one's room
            second = await alice.call("gated__job", {"key": "a3"})
            with pytest.raises(Refused) as forgotten:
                await alice.get(first["taskId"])
            assert forgotten.value.code == types.INVALID_PARAMS
            # two kept, both running: the router has no room for carol's
            with pytest.raises(Refused) as full:
                await carol.call("gated__job", {"key": "c1"})
            assert full.value.code == types.INVALID_PARAMS
            assert "router.tasks.max_tasks" in full.value.message
            assert (await bob.get(bobs["taskId"]))["status"] == "working"
            assert (await alice.get(second["taskId"]))["status"] == "working"
    log = (tmp_path / "gated.log").read_text("utf-8").splitlines()
    assert "started a2" not in log and "started c1" not in log


async def test_a_task_past_its_ttl_is_cancelled_upstream_and_then_unknown(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    async with front(provider, tmp_path, tasks={"ttl_s": 0.5}) as hosts:
        alice = hosts["alice"]
        with anyio.fail_after(60):
            task = await alice.call("gated__job", {"key": "t"})
            assert task["ttlMs"] == 500
            while True:  # polled as a host does, until the task has expired
                try:
                    await alice.get(task["taskId"])
                except Refused as refused:
                    assert refused.code == types.INVALID_PARAMS
                    break
                await anyio.sleep(0.05)
            with pytest.raises(Refused):
                await alice.request("tasks/cancel", {"taskId": task["taskId"]})
            if "started t" in (tmp_path / "gated.log").read_text("utf-8").splitlines():
                await until_logged(tmp_path / "gated.log", "cancelled t")
            while True:  # the trail has the task's end (written as the call is cut)
                if any(r["kind"] == "task" and r["outcome"] == "failed" for r in _trail(tmp_path)):
                    break
                await anyio.sleep(0.05)
    ended = [r for r in _trail(tmp_path) if r["kind"] == "task"]
    assert [r["outcome"] for r in ended] == ["working", "failed"]
    assert "router.tasks.ttl_s" in ended[-1]["error"]
    assert "released t" not in (tmp_path / "gated.log").read_text("utf-8")


async def test_a_result_over_result_bytes_fails_its_task_saying_so(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    async with front(provider, tmp_path, tasks={"result_bytes": 1024}) as hosts:
        alice = hosts["alice"]
        with anyio.fail_after(60):
            small = await alice.call("gated__big", {"size": 100})
            kept = await alice.until(small["taskId"], "completed")
            assert kept["result"]["content"][0]["text"] == "x" * 100

            large = await alice.call("gated__big", {"size": 4000})
            failed = await alice.until(large["taskId"], "failed")
            assert "result" not in failed
            assert failed["error"]["code"] == types.INTERNAL_ERROR
            assert "over the 1024 a task keeps" in failed["error"]["message"]


async def test_a_listen_stream_naming_a_task_hears_each_status_of_its_principals_only(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    async with front(provider, tmp_path) as hosts:
        alice, bob = hosts["alice"], hosts["bob"]
        with anyio.fail_after(60):
            done = (await alice.call("gated__job", {"key": "d"}))["taskId"]
            dropped = (await alice.call("gated__job", {"key": "e"}))["taskId"]
            bobs = (await bob.call("gated__job", {"key": "b"}))["taskId"]
            wanted = {"toolsListChanged": True, "taskIds": [done, dropped]}
            # bob names alice's task, then his own: he hears only his own
            async with (
                bob.listen({"taskIds": [done, bobs]}) as bobs_stream,
                alice.listen(wanted) as stream,
            ):
                acked = await stream.next()
                assert acked["method"] == "notifications/subscriptions/acknowledged"
                assert acked["params"]["notifications"]["taskIds"] == [done, dropped]
                assert (await bobs_stream.next())["method"] == acked["method"]

                await alice.call("gated__release", {"key": "d"})
                completed = await stream.next()
                assert completed["method"] == "notifications/tasks"
                params = completed["params"]
                assert (params["taskId"], params["status"]) == (done, "completed")
                assert params["result"]["content"][0]["text"] == "done d"
                assert {"createdAt", "lastUpdatedAt", "ttlMs"} <= set(params)
                assert "resultType" not in params
                subscription = "io.modelcontextprotocol/subscriptionId"
                assert params["_meta"][subscription] == stream.id

                await alice.request("tasks/cancel", {"taskId": dropped})
                cancelled = (await stream.next())["params"]
                assert (cancelled["taskId"], cancelled["status"]) == (dropped, "cancelled")

                await bob.call("gated__release", {"key": "b"})  # after alice's: his next frame
                heard = (await bobs_stream.next())["params"]
                assert (heard["taskId"], heard["status"]) == (bobs, "completed")
