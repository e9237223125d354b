"""The router as the tool search of an application that calls an LLM API directly.

```python
search = RouterToolSearch("http://127.0.0.1:8765", token=None)
# Anthropic Messages API: a search tool, and every tool found so far, deferred
tools = search.anthropic_tools()
reply = search.anthropic_result(tool_use)       # the search tool_use -> its tool_result
# OpenAI Responses API: client-executed tool search
tools = search.openai_tools()
item = search.openai_output(tool_search_call)   # -> the tool_search_output input item
```

It asks the router's `POST /v1/search` (docs/llm-api-search.md) over httpx2 and returns
plain dicts, typed for type checkers as the SDKs' request params (`anthropic.types.ToolParam`,
`ToolResultBlockParam`; `openai.types.responses.ToolSearchToolParam`,
`ResponseToolSearchOutputItemParamParam`): neither SDK is imported at run time.
`AsyncRouterToolSearch` is the same for `AsyncAnthropic` / `AsyncOpenAI`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import httpx2

if TYPE_CHECKING:  # for type checkers only: neither SDK is imported at run time
    from anthropic.types import TextBlockParam, ToolParam, ToolResultBlockParam
    from openai.types.responses import (
        ResponseToolSearchOutputItemParamParam,
        ToolSearchToolParam,
    )

SEARCH_TOOL = "search_tools"
SEARCH_DESCRIPTION = (
    "Search the tools available to you and load the ones that fit. Describe the task in "
    "plain words; the tools found become callable on your next turn. Search again for "
    "another step."
)
MAX_K = 50  # router.core.meta_tools.MAX_K, not imported: this module loads no more than httpx2
SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "the task, in plain words"},
        "k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_K,
            "description": "how many tools to load",
        },
    },
    "required": ["query"],
}


class RouterSearchError(Exception):
    """The router refused a search: `status` is the HTTP status, `detail` its reason."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"router answered {status}: {detail}")
        self.status = status
        self.detail = detail


class _Shapes:
    """What both clients share: the search tools, the request, and the answers' shapes."""

    def __init__(self, base_url: str, token: str | None, k: int | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.k = k
        self._deferred: dict[str, ToolParam] = {}

    def anthropic_tools(self) -> list[ToolParam]:
        """For `tools=`: the search tool, then every tool found so far with
        `defer_loading: true` (each stays out of the prompt until a result references it;
        the API wants every referenced tool listed)."""
        search: ToolParam = {
            "name": SEARCH_TOOL,
            "description": SEARCH_DESCRIPTION,
            "input_schema": SEARCH_PARAMETERS,
        }
        return [search, *self._deferred.values()]

    def openai_tools(self) -> list[ToolSearchToolParam]:
        """For `tools=`: the client-executed `tool_search` tool (found tools arrive in
        `tool_search_output` items, so they need no entry here)."""
        return [
            {
                "type": "tool_search",
                "execution": "client",
                "description": SEARCH_DESCRIPTION,
                "parameters": SEARCH_PARAMETERS,
            }
        ]

    def _body(self, arguments: Any, fmt: str, call_id: str | None = None) -> dict[str, Any]:
        """The `/v1/search` body for a model's search arguments; ValueError without a query."""
        if isinstance(arguments, str):
            arguments = json.loads(arguments or "{}")
        if not isinstance(arguments, Mapping):
            raise ValueError(f"{SEARCH_TOOL}: the arguments are not an object")
        query, k = arguments.get("query"), arguments.get("k", self.k)
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"{SEARCH_TOOL}: 'query' must be a non-empty string")
        body: dict[str, Any] = {"query": query, "format": fmt}
        if isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= MAX_K:
            body["k"] = k
        if call_id is not None:
            body["call_id"] = call_id
        return body

    def _anthropic(self, tool_use_id: str, answer: Mapping[str, Any]) -> ToolResultBlockParam:
        for tool in answer["tools"]:
            self._deferred[tool["name"]] = tool
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": answer["content"],
            "is_error": False,
        }

    def _url(self) -> str:
        return f"{self.base_url}/v1/search"


def _refused(answer: httpx2.Response) -> RouterSearchError:
    try:
        detail = answer.json()["detail"]
    except (ValueError, KeyError, TypeError):
        detail = answer.text
    if not isinstance(detail, str):  # a validation error's list of problems
        detail = json.dumps(detail)
    return RouterSearchError(answer.status_code, detail)


def _anthropic_error(tool_use_id: str, error: ValueError) -> ToolResultBlockParam:
    """A search call the model got wrong: it reads why, and can try again."""
    text: TextBlockParam = {"type": "text", "text": str(error)}
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": [text], "is_error": True}


def _openai_nothing(call_id: str | None) -> ResponseToolSearchOutputItemParamParam:
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": [],
    }


def _tool_use(block: Any) -> tuple[str, Any]:
    """The id and input of an Anthropic `tool_use` block (SDK object or dict)."""
    if isinstance(block, Mapping):
        return str(block["id"]), block.get("input", {})
    return str(block.id), block.input


def _search_call(item: Any) -> tuple[str | None, Any]:
    """The call_id and arguments of an OpenAI `tool_search_call` (SDK object or dict)."""
    if isinstance(item, Mapping):
        return item.get("call_id"), item.get("arguments", {})
    return item.call_id, item.arguments


class RouterToolSearch(_Shapes):
    """A blocking client of the router's `/v1/search`; use it as a context manager or
    `close()` it."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        k: int | None = None,
        timeout: float = 30.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, k)
        self._http = httpx2.Client(headers=self.headers, timeout=timeout, transport=transport)

    def search(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """`POST /v1/search` with `body` (docs/llm-api-search.md); RouterSearchError if
        refused."""
        answer = self._http.post(self._url(), json=dict(body))
        if answer.status_code != 200:
            raise _refused(answer)
        result: dict[str, Any] = answer.json()
        return result

    def anthropic_result(self, tool_use: Any) -> ToolResultBlockParam:
        """The `tool_result` block for the model's search `tool_use`: a `tool_reference`
        per tool found. Send it with `anthropic_tools()`, which now lists them."""
        tool_use_id, arguments = _tool_use(tool_use)
        try:
            body = self._body(arguments, "anthropic")
        except ValueError as error:
            return _anthropic_error(tool_use_id, error)
        return self._anthropic(tool_use_id, self.search(body))

    def openai_output(self, tool_search_call: Any) -> ResponseToolSearchOutputItemParamParam:
        """The `tool_search_output` input item for the model's `tool_search_call` (no tools
        when the call has no query)."""
        call_id, arguments = _search_call(tool_search_call)
        try:
            body = self._body(arguments, "openai", call_id)
        except ValueError:
            return _openai_nothing(call_id)
        output: ResponseToolSearchOutputItemParamParam = self.search(body)["output"]
        return output

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncRouterToolSearch(_Shapes):
    """`RouterToolSearch` for asyncio/trio applications."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        k: int | None = None,
        timeout: float = 30.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, k)
        self._http = httpx2.AsyncClient(headers=self.headers, timeout=timeout, transport=transport)

    async def search(self, body: Mapping[str, Any]) -> dict[str, Any]:
        answer = await self._http.post(self._url(), json=dict(body))
        if answer.status_code != 200:
            raise _refused(answer)
        result: dict[str, Any] = answer.json()
        return result

    async def anthropic_result(self, tool_use: Any) -> ToolResultBlockParam:
        tool_use_id, arguments = _tool_use(tool_use)
        try:
            body = self._body(arguments, "anthropic")
        except ValueError as error:
            return _anthropic_error(tool_use_id, error)
        return self._anthropic(tool_use_id, await self.search(body))

    async def openai_output(self, tool_search_call: Any) -> ResponseToolSearchOutputItemParamParam:
        call_id, arguments = _search_call(tool_search_call)
        try:
            body = self._body(arguments, "openai", call_id)
        except ValueError:
            return _openai_nothing(call_id)
        output: ResponseToolSearchOutputItemParamParam = (await self.search(body))["output"]
        return output

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
