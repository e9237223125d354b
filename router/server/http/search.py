"""`POST /v1/search`: the router as the tool search of the LLM APIs.

An application that calls the Anthropic Messages API or the OpenAI Responses API directly
gives the model a search tool of its own, and answers the model's search calls from here:
the same index, readiness waits and usage lift as `search_tools`, answered in the shape
that API's tool search expects (`router.accounting.tool_search`; docs/llm-api-search.md).
`router.clients.llm_search` is a client for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio.to_thread
from fastapi import APIRouter, Request

from router.accounting.formats import JsonObject, ToolFormat, serialise, to_mcp
from router.accounting.tool_search import (
    anthropic_deferred,
    openai_deferred,
    tool_references,
    tool_search_output,
)
from router.core.catalog import ToolRecord
from router.core.errors import StillStarting
from router.server.access.visibility import Visibility
from router.server.http.front import front_of
from router.server.http.rest_models import (
    REFUSALS,
    STILL_STARTING,
    Match,
    RoutedTool,
    TokenBill,
)
from router.server.http.routing import ListCosts
from router.server.http.search_models import HeldMatch, SearchRequest, SearchResponse
from router.server.listing.answer import SearchAnswer, search
from router.server.listing.rendering import held_objects

_DEFINITIONS: dict[ToolFormat, Callable[[ToolRecord], JsonObject]] = {
    ToolFormat.ANTHROPIC: anthropic_deferred,
    ToolFormat.OPENAI: openai_deferred,
    ToolFormat.MCP: to_mcp,
}

search_api = APIRouter(responses={**REFUSALS, **STILL_STARTING})


@search_api.post(
    "/v1/search",
    response_model=SearchResponse,
    summary="Answer an LLM API's tool search call",
)
async def search_tools(body: SearchRequest, request: Request) -> SearchResponse:
    """The top `k` tools for `query`, shaped for the API named by `format`: Anthropic
    `tool_reference` blocks for the search tool's `tool_result` (`content`), or OpenAI's
    `tool_search_output` item (`output`), with the found tools' definitions (`tools`),
    their scores and the tokens they cost. Upstreams still connecting are named in
    `pending`."""
    front = front_of(request)
    state = front["router"]
    await state.readiness.until_covered()  # at start, wait (bounded) for the starting upstreams
    if not state.index.ready.is_set():
        raise StillStarting("no tools indexed yet: the upstreams are still connecting")
    found = await search(state.searcher, body.query, body.k)
    visibility = state.settings.visibility

    def run() -> SearchResponse:
        return answer(body, found, front["costs"], visibility)

    return await anyio.to_thread.run_sync(run)


def answer(
    request: SearchRequest,
    found: SearchAnswer,
    costs: ListCosts,
    visibility: Visibility | None = None,
) -> SearchResponse:
    """The response for `found`, in `request`'s format; blocking (token counts): run it in
    a thread. The full list billed against is what the answer's view may see."""
    fmt, counter = request.format, costs.counter
    define = _DEFINITIONS[fmt]
    records = [scored.tool for scored in found.results]
    tools = [define(record) for record in records]
    content = output = None
    if fmt is ToolFormat.ANTHROPIC:
        content = tool_references(records) or [{"type": "text", "text": _none(found)}]
    elif fmt is ToolFormat.OPENAI:
        output = tool_search_output(records, request.call_id)
    routed = counter.count_text(serialise(tools))
    snapshot, view, visibility = found.snapshot, found.view, visibility or Visibility()
    shape = f"deferred-{fmt.value}"
    if not view.unrestricted:
        shape = f"{shape} {view.profiles}"

    def bill(every: Sequence[ToolRecord]) -> int:
        if not view.unrestricted:
            every = visibility.visible(view, every)
        return counter.count_text(serialise([define(record) for record in every]))

    full = costs.full_as(snapshot, shape, bill)
    assert found.k is not None  # a search for the top k, not within a budget
    return SearchResponse(
        query=found.query,
        format=fmt,
        mode=found.mode,
        k=found.k,
        tools=tools,
        content=content,
        output=output,
        results=[
            RoutedTool.ranked(scored, counter.count_text(serialise(tool)))
            for scored, tool in zip(found.results, tools, strict=True)
        ],
        tokens=TokenBill.of(counter.encoding_name, fmt, routed, full),
        catalog_tools=found.indexed,
        pending=found.pending,
        match=Match.of(found.fit, found.servers),
        held=[HeldMatch(**h) for h in held_objects(found.held)],
    )


def _none(found: SearchAnswer) -> str:
    text = f"No tools found for {found.query!r}."
    if found.pending:
        text += (
            f" Not searched yet, still starting: {', '.join(found.pending)} (search again soon)."
        )
    return text
