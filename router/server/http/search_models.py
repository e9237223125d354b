"""Request and response bodies of `POST /v1/search`, the tool search of the LLM APIs
(docs/llm-api-search.md)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field, model_validator

from router.accounting.formats import ToolFormat
from router.server.http.rest_models import Match, QueryRequest, RoutedTool, TokenBill


class SearchRequest(QueryRequest):
    """What a model's search call asked for, and the API to answer it in."""

    format: ToolFormat = Field(
        description="anthropic: Messages API custom tool search; openai: Responses API "
        "client-executed tool search; mcp: MCP tool objects"
    )
    call_id: str | None = Field(
        default=None,
        min_length=1,
        description="openai only: the `call_id` of the model's `tool_search_call`, echoed "
        "in `output` so that it is ready to send",
    )

    @model_validator(mode="after")
    def _call_id_for_openai(self) -> Self:
        if self.call_id is not None and self.format is not ToolFormat.OPENAI:
            raise ValueError(
                "call_id is for format openai (a tool_search_call's call_id); with anthropic, "
                "put `content` in the tool_result of your tool_use id"
            )
        return self


class HeldMatch(BaseModel):
    name: str = Field(description="the held tool's qualified name")
    server: str
    reason: str = Field(
        description="changed (since it was approved), new (strict pinning), or unverified "
        "(the pins cannot be read)"
    )
    approve: str = Field(description="the command that approves it")


class SearchResponse(BaseModel):
    query: str
    format: ToolFormat
    mode: str = Field(description="hybrid, or bm25 when no embedding model is loaded")
    k: int
    tools: list[dict[str, Any]] = Field(
        description="the found tools, best first: anthropic, Messages API tools with "
        "`defer_loading: true` (the request that carries `content` must list them); openai, "
        "Responses API function tools with `defer_loading: true` (as in `output`); mcp, "
        "MCP tool objects"
    )
    content: list[dict[str, Any]] | None = Field(
        description="anthropic only: the search tool's `tool_result` content, a "
        "`tool_reference` block per found tool (a text block when none is found)"
    )
    output: dict[str, Any] | None = Field(
        description="openai only: the `tool_search_output` input item that answers the "
        "model's `tool_search_call` (`call_id` as given, else null: set it)"
    )
    results: list[RoutedTool] = Field(description="the same tools, in the same order, scored")
    tokens: TokenBill = Field(
        description="tokens of `tools` as returned against every indexed tool in the same "
        "shape: what loading the found tools costs against listing them all"
    )
    catalog_tools: int = Field(description="tools in the index")
    pending: list[str] = Field(description="upstreams whose tools are not searchable yet")
    match: Match
    held: list[HeldMatch] = Field(
        default_factory=list,
        description="tools the query matches that tool pinning holds until a person "
        "approves them (not among `tools`): name, reason and the command that approves",
    )
