"""Code mode end to end (`router.mode: "code"`): a real router runs the model's program in
the pydantic-monty sandbox, and every call the program makes takes a direct call's path.

The upstreams are real processes on the mcp SDK: `tests/upstreams/shop.py` (large structured
results, an always-failing tool, a record of what ran), `guarded.py` (its own record of every
call that ran, so a refused call is proved never to have reached it) and `relay.py` (a call
that blocks until cancelled, and says whether it was). The router is `mcp-router serve` as a
child over stdio (the SDK `Client`, or raw JSON-RPC lines where a test needs every byte), and
in-process over streamable HTTP; both eras of the host: 2025-11-25 (the router asks with
`elicitation/create`) and 2026-07-28 (the run pauses at the call, and the host retries).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from router.approvals.sealing import PREFIX
from router.code_mode.outcome import Outcome, render
from router.code_mode.signatures import signature
from router.core.catalog import ToolRecord
from router.server.http.auth.security import SecurityPolicy
from tests.core.test_tracing import spans  # noqa: F401 (the fixture)
from tests.server.access.test_serve_policy import ERAS
from tests.support.http_serving import config, http_front, streamable_client
from tests.support.identity_provider import running_provider
from tests.support.serving import User, raw_router, router_parameters, write_config
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

SERVERS = {"shop": script("shop"), "guarded": script("guarded")}
FAST = {"max_seconds": 2, "max_memory_mb": 32, "max_tool_calls": 5}


@asynccontextmanager
async def routed(tmp_path: Path, **options: Any) -> AsyncIterator[Client]:
    """`serving`, bounded: a test's own router and client."""
    with anyio.fail_after(60):
        async with serving(tmp_path, **options) as client:
            yield client


@asynccontextmanager
async def serving(
    tmp_path: Path,
    *,
    era: str = "legacy",
    transport: str = "stdio",
    user: User | None = None,
    servers: dict[str, dict[str, Any]] | None = None,
    **router: Any,
) -> AsyncIterator[Client]:
    """A code-mode router (a child over stdio, or the HTTP front in process) and the SDK
    client of `era`."""
    options: dict[str, Any] = {"mode": era}
    if user is not None:
        options["elicitation_callback"] = user.elicitation
    servers = servers or SERVERS
    if transport == "http":
        cfg = config(servers, mode="code", cache_dir=str(tmp_path / "cache"), **router)
        async with (
            http_front(cfg) as front,
            streamable_client(front.mcp, **options) as client,
        ):
            yield client
        return
    parameters = router_parameters(write_config(tmp_path, servers, mode="code", **router))
    async with Client(parameters, **options) as client:
        assert client.protocol_version == ERAS[era]
        yield client


@pytest.fixture(scope="module", params=["stdio", "http"])
async def shop_client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Client]:
    """One default code-mode router and client per transport, for the programs that only
    read from the shop (no policy, nothing the upstreams record is read)."""
    async with serving(tmp_path_factory.mktemp("code-mode"), transport=request.param) as client:
        yield client


async def run(client: Client, code: str) -> types.CallToolResult:
    return await client.call_tool("execute", {"code": code})


async def ran(client: Client) -> list[str]:
    return first_text(await client.call_tool("guarded__ran", {})).splitlines()


# -- the listing and search ------------------------------------------------------------------


async def test_code_mode_lists_the_pins_search_tools_and_execute(tmp_path: Path) -> None:
    async with routed(tmp_path, pin=["guarded/read_note"]) as client:
        listed = (await client.list_tools()).tools
        found = await client.call_tool("search_tools", {"query": "list the shop's orders"})

    assert [tool.name for tool in listed] == ["guarded__read_note", "search_tools", "execute"]
    execute = listed[-1]
    assert execute.input_schema["required"] == ["code"]
    assert "await call_tool(name, arguments)" in (execute.description or "")
    assert "30 s of running time, 100 MiB of memory, 100 tool calls" in (execute.description or "")
    text = first_text(found)
    assert 'async def shop__list_orders(status: str = "all") -> {' in text
    assert '"orders": list[{"id": str, "customer_id": str, "status": str, "total": float' in text
    assert found.structured_content is not None
    assert found.structured_content["tools"][0]["name"] == "shop__list_orders"


def test_a_signature_reads_the_input_and_output_schemas() -> None:
    record = ToolRecord(
        server="s",
        name="find",
        qualified_name="s__find",
        description='Find things; says """ safely.',
        input_schema={
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 10},
                "query": {"type": "string", "description": "What to find."},
                "kind": {"enum": ["a", "b"]},
            },
            "required": ["query"],
        },
        output_schema={
            "type": "object",
            "$defs": {"Hit": {"type": "object", "properties": {"id": {"type": "integer"}}}},
            "properties": {"hits": {"type": "array", "items": {"$ref": "#/$defs/Hit"}}},
            "required": ["hits"],
        },
    )
    assert signature(record) == (
        'async def s__find(query: str, limit: int = 10, kind: Literal["a", "b"] = None) '
        '-> {"hits": list[{"id": NotRequired[int]}]}:\n'
        '    """Find things; says \\"\\"\\" safely.\n'
        "\n"
        "    query: What to find.\n"
        '    """'
    )


def test_names_python_cannot_take_make_one_arguments_dict() -> None:
    record = ToolRecord(
        server="s",
        name="get",
        qualified_name="s__get",
        description="",
        input_schema={"properties": {"user-id": {"type": "string"}}, "required": ["user-id"]},
    )
    assert signature(record).splitlines()[0] == (
        'async def s__get(arguments: {"user-id": str}) -> str:'
    )


def test_the_model_reads_what_was_printed_then_the_value() -> None:
    assert render(Outcome(value={"a": (1, 2)}, printed="one\n")) == 'one\nResult: {"a": [1, 2]}'
    assert render(Outcome(value="plain")) == "plain"
    assert render(Outcome(stopped="it ran longer (x)")).endswith("stopped: it ran longer (x).")


# -- programs ---------------------------------------------------------------------------------


async def test_a_program_calls_two_tools_and_its_last_expression_is_the_result(
    shop_client: Client,
) -> None:
    code = (
        "overdue = await call_tool('shop__list_orders', {'status': 'overdue'})\n"
        "top = max(overdue['orders'], key=lambda o: o['total'])\n"
        "customer = await call_tool('shop__get_customer', {'customer_id': top['customer_id']})\n"
        "print('orders:', overdue['count'])\n"
        "{'order': top['id'], 'email': customer['email']}"
    )
    with anyio.fail_after(60):
        result = await run(shop_client, code)
        direct = await shop_client.call_tool("shop__list_orders", {"status": "overdue"})

    assert not result.is_error, first_text(result)
    printed, value = first_text(result).split("\n", 1)
    assert printed == "orders: 30"
    assert direct.structured_content is not None
    top = max(direct.structured_content["orders"], key=lambda o: o["total"])
    number = int(top["customer_id"].removeprefix("c-"))
    assert json.loads(value.removeprefix("Result: ")) == {
        "order": top["id"],
        "email": f"c{number}@example.com",
    }


async def test_an_error_result_raises_in_the_program_which_may_catch_it(
    shop_client: Client,
) -> None:
    client = shop_client
    with anyio.fail_after(60):
        uncaught = await run(client, "await call_tool('shop__fail', {'reason': 'because'})")
        caught = await run(
            client,
            "try:\n"
            "    await call_tool('shop__fail', {'reason': 'x'})\n"
            "except RuntimeError as e:\n"
            "    r = 'caught: ' + str(e)\n"
            "r",
        )
        unknown = await run(client, "await call_tool('shop__nothing', {})")
        invalid = await run(client, "await call_tool('shop__get_customer', {'id': 1})")

    assert uncaught.is_error
    assert "RuntimeError: shop__fail answered an error:" in first_text(uncaught)
    assert "failed on purpose: because" in first_text(uncaught)
    assert "await call_tool('shop__fail'" in first_text(uncaught)  # the traceback's line
    assert not caught.is_error and first_text(caught).startswith("caught: shop__fail answered")
    assert "ValueError: unknown tool 'shop__nothing'" in first_text(unknown)
    assert "ValueError:" in first_text(invalid) and "customer_id" in first_text(invalid)


async def test_a_program_searches_for_more_tools(shop_client: Client) -> None:
    with anyio.fail_after(60):
        result = await run(
            shop_client,
            "found = await search_tools('refund an order', 3)\n[t['name'] for t in found]",
        )
    assert "shop__refund_order" in json.loads(first_text(result))


# -- the router's rules inside the program ----------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_denied_tool_called_from_code_is_refused_and_never_runs(
    tmp_path: Path, era: str, transport: str
) -> None:
    policy = {"deny": ["guarded/delete_*"]}
    async with routed(tmp_path, era=era, transport=transport, policy=policy) as client:
        result = await run(client, "await call_tool('guarded__delete_note', {'name': 'a'})")
        caught = await run(
            client,
            "try:\n"
            "    await call_tool('guarded__delete_note', {'name': 'a'})\n"
            "except PermissionError:\n"
            "    r = await call_tool('guarded__read_note', {'name': 'a'})\n"
            "r",
        )
        ran_calls = await ran(client)

    assert result.is_error
    assert "PermissionError:" in first_text(result)
    assert "denied by router.policy.deny 'guarded/delete_*'" in first_text(result)
    assert json.loads(first_text(caught)) == {"result": "note a"}
    assert ran_calls == ["read_note a"]  # the upstream's own record: delete_note never ran


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_confirm_tool_pauses_the_run_and_runs_once_the_user_accepts(
    tmp_path: Path, era: str, transport: str
) -> None:
    user = User("accept")
    code = (
        "before = await call_tool('guarded__read_note', {'name': 'a'})\n"
        "done = await call_tool('guarded__delete_note', {'name': 'a'})\n"
        "after = await call_tool('guarded__read_note', {'name': 'b'})\n"
        "[before['result'], done['result'], after['result']]"
    )
    policy = {"confirm": ["guarded/delete_note"]}
    async with routed(tmp_path, era=era, transport=transport, user=user, policy=policy) as client:
        result = await run(client, code)
        ran_calls = await ran(client)

    assert not result.is_error, first_text(result)
    assert json.loads(first_text(result)) == ["note a", "deleted a", "note b"]
    assert user.asked == ['Run delete_note on guarded?\n- name: "a"']  # once
    assert ran_calls == ["read_note a", "delete_note a", "read_note b"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_confirm_tool_is_refused_in_the_program_when_the_user_says_no(
    tmp_path: Path, era: str, action: str
) -> None:
    user = User(action)
    code = (
        "try:\n"
        "    await call_tool('guarded__delete_note', {'name': 'plans'})\n"
        "    r = 'ran'\n"
        "except PermissionError as e:\n"
        "    r = str(e)\n"
        "r"
    )
    policy = {"confirm": ["guarded/delete_note"]}
    async with routed(tmp_path, era=era, user=user, policy=policy) as client:
        result = await run(client, code)
        ran_calls = await ran(client)

    assert first_text(result) == (
        "guarded__delete_note answered an error: mcp-router: guarded__delete_note was not run: "
        "it needs the user's confirmation (router.policy.confirm 'guarded/delete_note') and "
        f"the user answered {action}."
    )
    assert user.asked == ['Run delete_note on guarded?\n- name: "plans"']
    assert ran_calls == []


class SlowUser(User):
    """Takes longer to answer than the run may take in all."""

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        await anyio.sleep(1.5)
        return await super().elicitation(context, params)


async def test_the_users_time_to_answer_is_not_the_programs(tmp_path: Path) -> None:
    """On 2026-07-28 the run waits for the retry outside `max_total_seconds`."""
    user = SlowUser("accept")
    policy = {"confirm": ["guarded/delete_note"]}
    code = {"max_total_seconds": 1}
    async with routed(tmp_path, era="auto", user=user, policy=policy, code=code) as client:
        await ran(client)  # the upstream is up: the run's second is its own
        result = await run(client, "await call_tool('guarded__delete_note', {'name': 'x'})")
    assert json.loads(first_text(result)) == {"result": "deleted x"}, first_text(result)
    assert len(user.asked) == 1


async def test_a_paused_run_resumes_only_with_its_own_state_and_program(tmp_path: Path) -> None:
    """2026-07-28 in raw JSON-RPC: the question comes back as an `InputRequiredResult`; a
    forged state, or the state with another program, resumes nothing."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    code = "await call_tool('guarded__delete_note', {'name': 'x'})"
    accept = {"mcp-router/confirm": {"action": "accept", "content": {}}}

    def execute(program: str, **extra: Any) -> dict[str, Any]:
        return {"name": "execute", "arguments": {"code": program}, "_meta": envelope, **extra}

    cfg = write_config(tmp_path, SERVERS, mode="code", policy={"confirm": ["guarded/delete_note"]})
    async with raw_router(cfg) as router:
        with anyio.fail_after(60):
            asked = await router.result("tools/call", execute(code))
            state = asked["requestState"]
            other = await router.request(
                "tools/call", execute("1", inputResponses=accept, requestState=state)
            )
            forged = await router.request(
                "tools/call", execute(code, inputResponses=accept, requestState=state[:-4] + "AAA=")
            )
            done = await router.result(
                "tools/call", execute(code, inputResponses=accept, requestState=state)
            )
            again = await router.request(
                "tools/call", execute(code, inputResponses=accept, requestState=state)
            )
            ran_calls = await router.result(
                "tools/call", {"name": "guarded__ran", "arguments": {}, "_meta": envelope}
            )

    assert asked["resultType"] == "input_required"
    assert list(asked["inputRequests"]) == ["mcp-router/confirm"]
    assert state.startswith(PREFIX)
    for refused, why in (
        (other, "issued for another call"),
        (forged, "not one this router sealed"),
        (again, "no longer paused here"),
    ):
        assert refused["error"]["code"] == types.INVALID_PARAMS, refused
        assert why in refused["error"]["message"], refused
    assert json.loads(done["content"][0]["text"]) == {"result": "deleted x"}
    assert ran_calls["content"][0]["text"] == "delete_note x"


# -- limits and the sandbox -------------------------------------------------------------------


LIMITS = {
    "time": ("while True:\n    pass", "router.code.max_seconds"),
    "memory": ("x = 'ab'\nwhile True:\n    x = x + x", "router.code.max_memory_mb"),
    "tool-calls": (
        "for i in range(100):\n    await call_tool('shop__events', {})",
        "router.code.max_tool_calls",
    ),
}


@pytest.mark.parametrize(
    ("limit", "transport"),
    [("time", "stdio"), ("memory", "stdio"), ("tool-calls", "stdio"), ("time", "http")],
)
async def test_a_run_past_a_limit_ends_naming_it_while_other_requests_are_served(
    tmp_path: Path, limit: str, transport: str
) -> None:
    code, named = LIMITS[limit]
    async with routed(tmp_path, transport=transport, code=FAST) as client:
        # The shop starts on first use: started here, the direct call below measures the
        # router serving while the loop runs, not a cold upstream's start on a slow machine.
        await client.call_tool("shop__get_customer", {"customer_id": "c-002"})
        answered: list[str] = []
        result: list[types.CallToolResult] = []

        async def program() -> None:
            result.append(await run(client, code))
            answered.append("program")

        async with anyio.create_task_group() as group:
            group.start_soon(program)
            await anyio.sleep(0.2)  # the program is running (or done, for the fast limits)
            customer = await client.call_tool("shop__get_customer", {"customer_id": "c-001"})
            answered.append("direct")
        after = await run(client, "1 + 1")

    assert result[0].is_error
    assert "mcp-router: the program was stopped: it" in first_text(result[0])
    assert f"({named})" in first_text(result[0])
    assert customer.structured_content == {
        "id": "c-001",
        "name": "Customer 1",
        "email": "c1@example.com",
        "tier": "silver",
    }
    if limit == "time":
        assert answered == ["direct", "program"]  # served while the loop ran
    assert first_text(after) == "2"  # the sandbox serves the next program


ESCAPES = [
    ("open('/etc/passwd').read()", "PermissionError: Permission denied: '/etc/passwd'"),
    ("open('/tmp/code-mode-escape', 'w').write('x')", "PermissionError"),
    ("import os\nos.environ['HOME']", "'os.environ' is not supported"),
    ("import os\nos.getenv('HOME')", "'os.getenv' is not supported"),
    ("import os\nos.system('id')", "module 'os' has no attribute 'system'"),
    ("import os\nos.listdir('/')", "PermissionError"),
    ("import subprocess", "No module named 'subprocess'"),
    ("import socket", "No module named 'socket'"),
    ("import ctypes", "No module named 'ctypes'"),
    ("import urllib.request", "No module named 'urllib'"),
    ("__import__('os')", "name '__import__' is not defined"),
    ("from pathlib import Path\nPath('/etc/hostname').read_text()", "PermissionError"),
    ("import sys\nsys.modules", "has no attribute 'modules'"),
]


async def test_the_sandbox_refuses_files_network_environment_and_processes(
    tmp_path: Path,
) -> None:
    async with routed(tmp_path, servers={"guarded": script("guarded")}) as client:
        results = [await run(client, code) for code, _ in ESCAPES]
        leaked = await run(client, "secret = 'mine'\n1")
        fresh = await run(client, "secret")

    for (code, refusal), result in zip(ESCAPES, results, strict=True):
        assert result.is_error, code
        assert refusal in first_text(result), (code, first_text(result))
    assert not await anyio.Path("/tmp/code-mode-escape").exists()
    assert first_text(leaked) == "1"
    assert "NameError: name 'secret' is not defined" in first_text(fresh)  # a fresh sandbox


async def test_cancelling_execute_cancels_the_call_in_flight(tmp_path: Path) -> None:
    """The host sends `notifications/cancelled` for its `execute`; the upstream's handler
    of the call the program was waiting on is cancelled too."""
    cfg = write_config(tmp_path, {"relay": script("relay")}, mode="code")
    program = {"code": "await call_tool('relay__block', {'tag': 'one'})\n'unreachable'"}
    async with raw_router(cfg) as router:
        with anyio.fail_after(60):
            await router.initialize()
            await router.send(
                {
                    "jsonrpc": "2.0",
                    "id": "program",
                    "method": "tools/call",
                    "params": {"name": "execute", "arguments": program},
                }
            )
            running = await router.call("relay__started", {"tag": "one"})
            await router.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": "program", "reason": "the host gave up"},
                }
            )
            outcome = await router.call("relay__outcome", {"tag": "one"})
            after = await router.call("execute", {"code": "'still here'"})
            lines = await router.finish()

    assert running["content"][0]["text"] == "started"
    assert outcome["content"][0]["text"] == "cancelled"  # said by the upstream process
    assert after["content"][0]["text"] == "still here"
    assert not [line for line in lines if b'"program"' in line]  # a cancelled call: no answer
    assert router.process.returncode == 0


async def test_code_mode_without_the_sandbox_names_what_to_install(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {"guarded": script("guarded")}, mode="code")
    launcher = (
        "import sys; sys.modules['pydantic_monty'] = None; from router.cli.main import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    process = await anyio.run_process(
        [sys.executable, "-c", launcher, "serve", "--config", str(cfg)], check=False
    )
    assert process.returncode == 2
    assert "pip install 'mcp-router[code]'" in process.stderr.decode()
    assert 'router.mode is "code"' in process.stderr.decode()


# -- over HTTP: the same path, its metrics and its spans --------------------------------------


async def test_over_http_each_call_in_the_run_is_counted_and_traced(
    tmp_path: Path,
    spans: InMemorySpanExporter,  # noqa: F811
) -> None:
    code = (
        "import asyncio\n"
        "a, b = await asyncio.gather(\n"
        "    call_tool('guarded__read_note', {'name': 'a'}),\n"
        "    call_tool('guarded__read_note', {'name': 'b'}),\n"
        ")\n"
        "a['result'] + ', ' + b['result']"
    )
    cfg = config(
        {"guarded": script("guarded")},
        mode="code",
        policy={"deny": ["guarded/reset_*"]},
        cache_dir=str(tmp_path / "cache"),
    )
    async with http_front(cfg) as front:
        with anyio.fail_after(30):
            async with streamable_client(front.mcp) as client:
                result = await run(client, code)
                denied = await run(client, "await call_tool('guarded__reset_all', {})")
        metrics = front.state.metrics

    assert first_text(result) == "note a, note b"
    assert "PermissionError" in first_text(denied)
    assert metrics.upstream_calls.labels("guarded")._value.get() == 2
    assert metrics.code_runs.labels("ok")._value.get() == 1
    assert metrics.code_runs.labels("error")._value.get() == 1
    finished = spans.get_finished_spans()
    runs = [s for s in finished if s.name == "mcp-router execute"]
    forwards = [s for s in finished if s.name == "mcp-router forward guarded__read_note"]
    assert len(runs) == 2 and len(forwards) == 2
    assert runs[0].context is not None
    assert {s.parent.span_id for s in forwards if s.parent} == {runs[0].context.span_id}


async def test_a_program_runs_as_its_principal_under_its_profile(tmp_path: Path) -> None:
    """Identities at the HTTP front: a program sees and calls what its caller's profile
    permits, and a paused run cannot be resumed by another principal."""
    audience = "https://router.test/mcp"
    async with running_provider() as provider:
        cfg = config(
            {"ledger": script("ledger"), "guarded": script("guarded")},
            mode="code",
            cache_dir=str(tmp_path / "cache"),
            policy={"confirm": ["guarded/delete_note"]},
            http={"oauth": {"issuer": provider.url, "audience": audience, "scopes": ["mcp"]}},
            profiles={
                "finance": {"groups": ["finance"], "allow": ["*"]},
                "default": {"deny": ["ledger/*"]},
            },
        )
        alice = {"Authorization": f"Bearer {provider.token('alice', audience, groups=['finance'])}"}
        bob = {"Authorization": f"Bearer {provider.token('bob', audience, groups=['support'])}"}
        program = (
            "found = [t['name'] for t in await search_tools('post a journal entry', 5)]\n"
            "try:\n"
            "    posted = await call_tool('ledger__post_entry', "
            "{'account': 'payroll', 'amount': 5, 'memo': 'x'})\n"
            "except ValueError as e:\n"
            "    posted = 'refused: ' + str(e)\n"
            "{'found': found, 'posted': posted}"
        )
        pause = "await call_tool('guarded__delete_note', {'name': 'x'})"
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(60):
                options = {"mode": "auto", "elicitation_callback": User("accept").elicitation}
                async with streamable_client(front.mcp, alice, **options) as client:
                    as_alice = json.loads(first_text(await run(client, program)))
                    asked = await client.session.call_tool(
                        "execute", {"code": pause}, allow_input_required=True
                    )
                async with streamable_client(front.mcp, bob, mode="auto") as client:
                    as_bob = json.loads(first_text(await run(client, program)))
                    assert isinstance(asked, types.InputRequiredResult)
                    with pytest.raises(MCPError) as stolen:
                        await client.call_tool(
                            "execute",
                            {"code": pause},
                            input_responses={
                                "mcp-router/confirm": types.ElicitResult(action="accept")
                            },
                            request_state=asked.request_state,
                        )

    assert "ledger__post_entry" in as_alice["found"]
    assert as_alice["posted"] == {"result": "posted 5.0 to payroll (x)"}
    assert not any(name.startswith("ledger__") for name in as_bob["found"])
    assert as_bob["posted"].startswith("refused: unknown tool 'ledger__post_entry'")
    assert "issued to another principal" in stolen.value.error.message
