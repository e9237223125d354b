"""`POST /v1/search`: the router as the tool search of the LLM APIs.

An application that calls the Anthropic Messages API or the OpenAI Responses API directly
gives the model a search tool of its own, and answers the model's search calls from here:
the same index, readiness waits and usage lift as `search_tools`, answered in the shape
that API's tool search expects (`router.accounting.tool_search`; docs/llm-api-search.md).
`router.clients.llm_search` is a client for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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
from router.policy.profiles import View
from router.retrieval.types import ScoredTool
from router.server.access.visibility import Visibility
from router.server.http.front import front_of
from router.server.http.rest_models import ErrorBody, RoutedTool, TokenBill
from router.server.http.routing import ListCosts
from router.server.http.search_models import HeldMatch, SearchRequest, SearchResponse
from router.server.listing.index import Snapshot
from router.server.listing.rendering import held_objects
from router.server.listing.searching import HeldTool

_DEFINITIONS: dict[ToolFormat, Callable[[ToolRecord], JsonObject]] = {
    ToolFormat.ANTHROPIC: anthropic_deferred,
    ToolFormat.OPENAI: openai_deferred,
    ToolFormat.MCP: to_mcp,
}

_REFUSALS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "missing or wrong bearer token (when one is set)"},
    403: {"model": ErrorBody, "description": "Origin not in router.http.allowed_origins"},
    413: {"model": ErrorBody, "description": "body over router.http.max_body_bytes"},
    421: {"model": ErrorBody, "description": "Host not in router.http.allowed_hosts"},
    503: {"model": ErrorBody, "description": "no upstream's tools are indexed yet"},
}

search_api = APIRouter(responses=_REFUSALS)


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
    k = body.k or state.settings.k
    view = state.settings.visibility.view()
    found = await state.search(body.query, k, view=view)
    held = await state.searcher.held_for(body.query, view)
    snapshot, pending = state.snapshot, state.pending_upstreams()
    visible = None if view.unrestricted else (state.settings.visibility, view)

    def run() -> SearchResponse:
        return answer(body, k, found, snapshot, front["costs"], pending, visible, held)

    return await anyio.to_thread.run_sync(run)


def answer(
    request: SearchRequest,
    k: int,
    found: Sequence[ScoredTool],
    snapshot: Snapshot,
    costs: ListCosts,
    pending: list[str],
    visible: tuple[Visibility, View] | None = None,
    held: Sequence[HeldTool] = (),
) -> SearchResponse:
    """The response for `found`; blocking (token counts): run it in a thread. With
    `visible`, the full list billed against is what that view may see; `held`, the held
    tools the query matches."""
    fmt, counter = request.format, costs.counter
    define = _DEFINITIONS[fmt]
    records = [scored.tool for scored in found]
    tools = [define(record) for record in records]
    content = output = None
    if fmt is ToolFormat.ANTHROPIC:
        content = tool_references(records) or [{"type": "text", "text": _none(request, pending)}]
    elif fmt is ToolFormat.OPENAI:
        output = tool_search_output(records, request.call_id)
    routed = counter.count_text(serialise(tools))
    shape, hidden = f"deferred-{fmt.value}", 0
    if visible is not None:
        visibility, view = visible
        shape, hidden = f"{shape} {view.profiles}", len(visibility.hidden(snapshot, view))

    def bill(every: Sequence[ToolRecord]) -> int:
        if visible is not None:
            every = visible[0].visible(visible[1], every)
        return counter.count_text(serialise([define(record) for record in every]))

    full = costs.full_as(snapshot, shape, bill)
    return SearchResponse(
        query=request.query,
        format=fmt,
        mode=snapshot.retriever.modes[0].value if snapshot.retriever else "bm25",
        k=k,
        tools=tools,
        content=content,
        output=output,
        results=[
            RoutedTool(
                name=scored.qualified_name,
                server=scored.tool.server,
                tool=scored.tool.name,
                rank=scored.rank,
                score=scored.score,
                dense_score=scored.dense_score,
                bm25_score=scored.bm25_score,
                exact_match=scored.exact_match,
                pinned=False,
                tokens=counter.count_text(serialise(tool)),
            )
            for scored, tool in zip(found, tools, strict=True)
        ],
        tokens=TokenBill.of(counter.encoding_name, fmt, routed, full),
        catalog_tools=len(snapshot.catalog) - hidden,
        pending=pending,
        held=[HeldMatch(**h) for h in held_objects(held)],
    )


def _none(request: SearchRequest, pending: list[str]) -> str:
    text = f"No tools found for {request.query!r}."
    if pending:
        text += f" Not searched yet, still starting: {', '.join(pending)} (search again soon)."
    return text
