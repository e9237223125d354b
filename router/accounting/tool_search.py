"""What the LLM APIs' own tool search expects back, built from the router's tools.

- Anthropic Messages API, custom tool search
  (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool, "Custom
  tool search implementation"): the application's search tool answers with a `tool_result`
  whose content is `{"type": "tool_reference", "tool_name": ...}` blocks
  (`anthropic.types.ToolReferenceBlockParam`). Every referenced tool must be in the
  request's `tools` with `defer_loading: true` (`anthropic.types.ToolParam`); the API then
  expands the reference into the definition.
- OpenAI Responses API, client-executed tool search
  (https://developers.openai.com/api/docs/guides/tools-tool-search, "Client-executed tool
  search"): the model emits a `tool_search_call`; the application answers with a
  `tool_search_output` item (`execution: "client"`, the call's `call_id`) whose `tools` are
  the definitions to load (`openai.types.responses.ResponseInputItemParam`'s
  `ResponseToolSearchOutputItemParamParam`), here Responses function tools
  (`FunctionToolParam`) marked `defer_loading: true`.

Tool names are the router's qualified names, which both APIs accept.
"""

from __future__ import annotations

from collections.abc import Iterable

from router.accounting.formats import JsonObject, normalise_schema, to_anthropic
from router.core.catalog import ToolRecord


def anthropic_deferred(tool: ToolRecord) -> JsonObject:
    """A Messages API tool that stays out of the prompt until a `tool_reference` names it."""
    return {**to_anthropic(tool), "defer_loading": True}


def openai_deferred(tool: ToolRecord) -> JsonObject:
    """A Responses API function tool, loaded through tool search. Not strict: strict mode
    needs every property required and no additional ones, which upstream schemas rarely
    are, and the Responses API otherwise tries strict validation on its own."""
    return {
        "type": "function",
        "name": tool.qualified_name,
        "description": tool.description,
        "parameters": normalise_schema(tool.input_schema),
        "strict": False,
        "defer_loading": True,
    }


def tool_references(tools: Iterable[ToolRecord]) -> list[JsonObject]:
    """The content of the Anthropic search tool's `tool_result`, one block per tool."""
    return [{"type": "tool_reference", "tool_name": tool.qualified_name} for tool in tools]


def tool_search_output(tools: Iterable[ToolRecord], call_id: str | None) -> JsonObject:
    """The OpenAI input item that answers a client-executed `tool_search_call`."""
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": [openai_deferred(tool) for tool in tools],
    }
