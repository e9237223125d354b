"""`POST /v1/search` and `router.clients.llm_search`: the router as the tool search of the Anthropic
Messages API and the OpenAI Responses API.

One front (in-process, BM25 only, a bearer token) serves two SDK upstreams
(tests/upstreams/guarded.py and relay.py). Every shape the router returns is checked against
the official SDKs' own request types: validated with pydantic and dumped back unchanged, so
a missing, misspelt or extra key fails. The helper runs end to end through the official SDK
clients, whose HTTP transport is a stub that plays the model: no network.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from pydantic import TypeAdapter

from router.clients import llm_search
from router.clients.llm_search import AsyncRouterToolSearch, RouterSearchError, RouterToolSearch
from router.core.meta_tools import MAX_K
from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import Front, config, http_front, until_indexed
from tests.upstream.test_upstream_pool import script

if TYPE_CHECKING:
    from anthropic.types import MessageParam

pytestmark = pytest.mark.processes

PAGE = Path(__file__).resolve().parents[3] / "docs" / "llm-api-search.md"
TOKEN = "search-token-5678"
GOOD = {"Authorization": f"Bearer {TOKEN}"}
TOOLS = 9  # guarded: 4, relay: 5


@pytest.fixture(scope="module")
async def front() -> AsyncIterator[Front]:
    cfg = config({"guarded": script("guarded"), "relay": script("relay")})
    async with http_front(cfg, SecurityPolicy(token=TOKEN)) as running:
        with anyio.fail_after(30):
            await until_indexed(running.state)
        yield running


SHAPES = {
    "anthropic.types": (
        "MessageParam",
        "ToolParam",
        "ToolReferenceBlockParam",
        "ToolResultBlockParam",
    ),
    "openai.types.responses": (
        "FunctionToolParam",
        "ResponseInputItemParam",
        "ResponseInputParam",
        "ResponseToolSearchOutputItemParamParam",
        "ToolSearchToolParam",
    ),
}
"""The SDKs' request types the answers are checked against, imported when a test runs: the
two SDKs take seconds to import, which every test worker would pay to collect this file."""


def conforms(kind: str, value: Any) -> None:
    """`value` is a valid `kind` (an SDK param type, by name) and holds nothing `kind` does
    not know: pydantic drops unknown keys of a TypedDict, so dumping must give `value` back."""
    module = next(module for module, names in SHAPES.items() if kind in names)
    adapter: TypeAdapter[Any] = TypeAdapter(getattr(importlib.import_module(module), kind))
    dumped = adapter.dump_python(adapter.validate_python(value), mode="json", warnings="error")
    assert dumped == value


async def search(front: Front, body: dict[str, Any], **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=front.url, headers=headers or GOOD) as http:
        with anyio.fail_after(10):
            return await http.post("/v1/search", json=body)


async def test_anthropic_search_answers_with_tool_references_to_deferred_tools(
    front: Front,
) -> None:
    answer = await search(front, {"query": "delete a note", "k": 2, "format": "anthropic"})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    names = [tool["name"] for tool in body["tools"]]
    assert names[0] == "guarded__delete_note" and len(names) == 2
    assert body["content"] == [{"type": "tool_reference", "tool_name": n} for n in names]
    assert body["output"] is None
    for tool in body["tools"]:
        assert tool["defer_loading"] is True
        conforms("ToolParam", tool)
    for block in body["content"]:
        conforms("ToolReferenceBlockParam", block)
    result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": body["content"]}
    conforms("ToolResultBlockParam", result)
    assert [r["name"] for r in body["results"]] == names
    assert body["results"][0]["rank"] == 1
    assert (body["query"], body["k"], body["mode"]) == ("delete a note", 2, "bm25")
    assert body["catalog_tools"] == TOOLS and body["pending"] == []
    tokens = body["tokens"]
    assert 0 < tokens["routed"] < tokens["full"] and tokens["format"] == "anthropic"
    assert tokens["routed"] >= sum(r["tokens"] for r in body["results"])


async def test_openai_search_answers_with_the_tool_search_output_item(front: Front) -> None:
    answer = await search(
        front, {"query": "echo a message", "k": 3, "format": "openai", "call_id": "call_7"}
    )

    assert answer.status_code == 200, answer.text
    body = answer.json()
    output = body["output"]
    assert body["tools"][0]["name"] == "relay__echo" and len(body["tools"]) <= 3
    assert output == {
        "type": "tool_search_output",
        "call_id": "call_7",
        "execution": "client",
        "status": "completed",
        "tools": body["tools"],
    }
    assert body["content"] is None
    conforms("ResponseToolSearchOutputItemParamParam", output)
    conforms("ResponseInputItemParam", output)
    for tool in body["tools"]:
        assert (tool["type"], tool["strict"], tool["defer_loading"]) == ("function", False, True)
        conforms("FunctionToolParam", tool)
    assert 0 < body["tokens"]["routed"] < body["tokens"]["full"]


async def test_mcp_search_answers_with_mcp_tool_objects(front: Front) -> None:
    answer = await search(front, {"query": "delete a note", "format": "mcp"})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    tools = [types.Tool.model_validate(tool) for tool in body["tools"]]
    assert tools[0].name == "guarded__delete_note"
    assert tools[0].annotations is not None and tools[0].annotations.destructive_hint
    assert body["k"] == 5 and len(tools) <= 5  # router.k; BM25 finds what shares a word
    assert (body["content"], body["output"]) == (None, None)


async def test_nothing_found_is_a_text_block_for_anthropic_and_no_tools_for_openai(
    front: Front,
) -> None:
    anthropic_answer = await search(front, {"query": "zzzqqq", "format": "anthropic"})
    openai_answer = await search(front, {"query": "zzzqqq", "format": "openai"})

    content = anthropic_answer.json()["content"]
    assert content == [{"type": "text", "text": "No tools found for 'zzzqqq'."}]
    conforms(
        "ToolResultBlockParam", {"type": "tool_result", "tool_use_id": "t", "content": content}
    )
    output = openai_answer.json()["output"]
    assert (output["tools"], output["call_id"]) == ([], None)
    conforms("ResponseToolSearchOutputItemParamParam", output)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"query": "", "format": "anthropic"}, "at least 1 character"),
        ({"query": "   ", "format": "openai"}, "the query is blank"),
        ({"query": "x", "format": "yaml"}, "'mcp', 'openai' or 'anthropic'"),
        ({"query": "x"}, "Field required"),
        ({"query": "x", "format": "mcp", "k": 0}, "greater than or equal to 1"),
        ({"query": "x", "format": "mcp", "k": MAX_K + 1}, f"less than or equal to {MAX_K}"),
        ({"query": "x", "format": "anthropic", "call_id": "c"}, "call_id is for format openai"),
        ({"query": "x", "format": "mcp", "limit": 3}, "Extra inputs are not permitted"),
    ],
)
async def test_bad_input_is_422_naming_the_problem(
    front: Front, body: dict[str, Any], problem: str
) -> None:
    answer = await search(front, body)

    assert answer.status_code == 422
    assert problem in json.dumps(answer.json()["detail"])


async def test_without_the_token_a_search_is_401(front: Front) -> None:
    missing = await search(front, {"query": "x", "format": "mcp"}, Accept="application/json")
    wrong = await search(front, {"query": "x", "format": "mcp"}, Authorization="Bearer nope")

    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert "detail" in missing.json()


async def test_the_openapi_document_describes_the_search(front: Front) -> None:
    async with httpx2.AsyncClient(base_url=front.url, headers=GOOD) as http:
        with anyio.fail_after(10):
            openapi = (await http.get("/openapi.json")).json()

    codes = set(openapi["paths"]["/v1/search"]["post"]["responses"])
    assert codes == {"200", "401", "403", "413", "421", "422", "503"}
    request = openapi["components"]["schemas"]["SearchRequest"]
    assert request["required"] == ["query", "format"]


def stub_model(replies: list[dict[str, Any]], sent: list[dict[str, Any]]) -> httpx2.MockTransport:
    """An LLM API that records each request body and answers the next reply."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=replies[len(sent) - 1])

    return httpx2.MockTransport(handle)


def anthropic_message(*content: dict[str, Any], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": f"msg_{len(content)}",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def in_thread(front: Front, flow: Callable[[RouterToolSearch], Any]) -> Any:
    """Run a blocking flow with the sync helper off the loop that serves the front."""

    def run() -> Any:
        with RouterToolSearch(front.url, token=TOKEN) as helper:
            return flow(helper)

    return anyio.to_thread.run_sync(run)


async def test_the_helper_serves_the_anthropic_sdk_as_its_tool_search(front: Front) -> None:
    search_call = {
        "type": "tool_use",
        "id": "toolu_search",
        "name": "search_tools",
        "input": {"query": "delete a note", "k": 2},
    }
    delete_call = {
        "type": "tool_use",
        "id": "toolu_delete",
        "name": "guarded__delete_note",
        "input": {"name": "a"},
    }
    sent: list[dict[str, Any]] = []
    transport = stub_model([anthropic_message(search_call), anthropic_message(delete_call)], sent)

    def flow(helper: RouterToolSearch) -> tuple[list[Any], Any]:
        import anthropic

        client = anthropic.Anthropic(
            api_key="test", http_client=httpx2.Client(transport=transport), max_retries=0
        )
        messages: list[MessageParam] = [{"role": "user", "content": "Delete my note 'a'."}]
        first_tools = helper.anthropic_tools()
        reply = client.messages.create(
            model="claude-test", max_tokens=256, tools=first_tools, messages=messages
        )
        tool_use = next(block for block in reply.content if block.type == "tool_use")
        result = helper.anthropic_result(tool_use)
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": [result]},
        ]
        second = client.messages.create(
            model="claude-test", max_tokens=256, tools=helper.anthropic_tools(), messages=messages
        )
        return first_tools, second.content[0]

    with anyio.fail_after(30):
        first_tools, called = await in_thread(front, flow)

    assert [t["name"] for t in first_tools] == ["search_tools"]
    assert "defer_loading" not in first_tools[0]  # the search tool itself is never deferred
    tools, result = sent[1]["tools"], sent[1]["messages"][-1]["content"][0]
    assert [t["name"] for t in tools][:2] == ["search_tools", "guarded__delete_note"]
    assert all(t["defer_loading"] for t in tools[1:]) and len(tools) == 3
    assert result["tool_use_id"] == "toolu_search" and not result["is_error"]
    assert result["content"][0] == {"type": "tool_reference", "tool_name": "guarded__delete_note"}
    for tool in tools:
        conforms("ToolParam", tool)
    conforms("ToolResultBlockParam", result)
    assert called.type == "tool_use" and called.name == "guarded__delete_note"


async def test_the_helper_serves_the_openai_sdk_as_its_client_executed_tool_search(
    front: Front,
) -> None:
    search_call = {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "call_search",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "echo a message"},
    }
    sent: list[dict[str, Any]] = []
    replies: list[dict[str, Any]] = [
        {"id": "resp_1", "object": "response", "output": [search_call]},
        {"id": "resp_2", "object": "response", "output": []},
    ]
    transport = stub_model(replies, sent)
    import openai

    client = openai.AsyncOpenAI(
        api_key="test", http_client=httpx2.AsyncClient(transport=transport), max_retries=0
    )
    async with AsyncRouterToolSearch(front.url, token=TOKEN, k=2) as helper:
        with anyio.fail_after(30):
            first = await client.responses.create(
                model="gpt-test", input="Say hello back.", tools=helper.openai_tools()
            )
            call = first.output[0]
            assert call.type == "tool_search_call"
            output = await helper.openai_output(call)
            await client.responses.create(
                model="gpt-test",
                input=[call.to_dict(), output],  # type: ignore[list-item]
                tools=helper.openai_tools(),
            )
        await client.close()

    conforms("ToolSearchToolParam", sent[0]["tools"][0])
    assert sent[0]["tools"][0]["execution"] == "client"
    item = sent[1]["input"][1]
    assert item["type"] == "tool_search_output" and item["call_id"] == "call_search"
    assert item["tools"][0]["name"] == "relay__echo" and len(item["tools"]) <= 2
    conforms("ResponseInputParam", sent[1]["input"])


async def test_a_search_call_without_a_query_gets_an_answer_the_model_can_act_on() -> None:
    unreachable = "http://127.0.0.1:9"  # no request is made
    with RouterToolSearch(unreachable) as helper:
        result = helper.anthropic_result({"id": "toolu_x", "input": {"k": 3}})
    async with AsyncRouterToolSearch(unreachable) as async_helper:
        output = await async_helper.openai_output({"call_id": "c1", "arguments": "{}"})

    assert result["is_error"] and "'query' must be a non-empty string" in json.dumps(result)
    conforms("ToolResultBlockParam", result)
    assert output["tools"] == [] and output["call_id"] == "c1"
    conforms("ResponseToolSearchOutputItemParamParam", output)


async def test_the_helper_raises_the_routers_refusal(front: Front) -> None:
    def flow(helper: RouterToolSearch) -> RouterSearchError:
        with pytest.raises(RouterSearchError) as refused:
            helper.search({"query": "x", "format": "mcp", "k": 0})
        return refused.value

    def wrong_token() -> RouterSearchError:
        with RouterToolSearch(front.url, token="nope") as helper:
            with pytest.raises(RouterSearchError) as refused:
                helper.anthropic_result({"id": "t", "input": {"query": "x"}})
            return refused.value

    with anyio.fail_after(20):
        invalid = await in_thread(front, flow)
        unauthorised = await anyio.to_thread.run_sync(wrong_token)

    assert invalid.status == 422 and "greater than or equal to 1" in invalid.detail
    assert unauthorised.status == 401


def test_the_helper_loads_neither_sdk_nor_the_router_core() -> None:
    code = (
        "import sys, router.clients.llm_search; "
        "print(sorted(m for m in ('anthropic', 'openai', 'mcp', 'router.core.catalog') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
    assert llm_search.MAX_K == MAX_K


def readme_examples() -> list[str]:
    """The page's worked examples (Anthropic, then OpenAI), as they are written."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("\n## Worked examples\n") :]
    return re.findall(r"```python\n(.*?)```", section, re.S)


async def test_the_readme_examples_run_through_the_sdks(
    front: Front, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic_example, openai_example = readme_examples()
    use = {"type": "tool_use", "id": "toolu_2", "name": "relay__echo", "input": {"text": "hi"}}
    search_use = {**use, "id": "toolu_1", "name": "search_tools", "input": {"query": "echo"}}
    done = {"type": "text", "text": "hi"}
    to_anthropic: list[dict[str, Any]] = []
    replies = [anthropic_message(search_use), anthropic_message(use)]
    replies.append(anthropic_message(done, stop="end_turn"))
    anthropic_transport = stub_model(replies, to_anthropic)
    search_call = {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "call_1",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "echo"},
    }
    function_call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_2",
        "name": "relay__echo",
        "arguments": '{"text": "hi"}',
        "status": "completed",
    }
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    }
    to_openai: list[dict[str, Any]] = []
    openai_replies = [
        {"id": f"resp_{n}", "object": "response", "output": [item]}
        for n, item in enumerate([search_call, function_call, message])
    ]
    openai_transport = stub_model(openai_replies, to_openai)
    import anthropic
    import openai

    real_anthropic, real_openai = anthropic.Anthropic, openai.OpenAI
    monkeypatch.setattr(
        anthropic,
        "Anthropic",
        lambda: real_anthropic(
            api_key="test", http_client=httpx2.Client(transport=anthropic_transport)
        ),
    )
    monkeypatch.setattr(
        openai,
        "OpenAI",
        lambda: real_openai(api_key="test", http_client=httpx2.Client(transport=openai_transport)),
    )
    calls: list[tuple[str, Any]] = []

    def call(name: str, arguments: Any) -> str:  # the application's own tool calling
        calls.append((name, arguments))
        return "hi"

    def run(example: str) -> None:
        code = example.replace('"http://127.0.0.1:8765"', f'"{front.url}", token="{TOKEN}"', 1)
        namespace: dict[str, Any] = {"call": call}
        exec(code, namespace)
        namespace["search"].close()  # an application would keep it for its life

    with anyio.fail_after(30):
        await anyio.to_thread.run_sync(run, anthropic_example)
        await anyio.to_thread.run_sync(run, openai_example)

    assert calls == [("relay__echo", {"text": "hi"})] * 2
    references = to_anthropic[1]["messages"][-1]["content"][0]["content"]
    assert references[0] == {"type": "tool_reference", "tool_name": "relay__echo"}
    assert "relay__echo" in [tool["name"] for tool in to_anthropic[2]["tools"]]
    output = to_openai[1]["input"][-1]
    assert output["type"] == "tool_search_output" and output["call_id"] == "call_1"
    assert output["tools"][0]["name"] == "relay__echo"
    conforms("ResponseInputParam", to_openai[2]["input"])
