"""The router's own tools: `search_tools` and `call_tool` (docs/architecture.md#the-surfaces),
and `read_result`, which reads on in a cut result.

They are defined as `ToolRecord`s so that token accounting prices them exactly like
upstream tools. `read_result` is not listed (every listing keeps its bytes, so a host's
prompt cache survives): a cut result's marker gives the `call_tool` call that reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from router.core.catalog import ToolRecord, fingerprint_text
from router.core.errors import InvalidParams

SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"
READ_RESULT = "read_result"
EXECUTE = "execute"
"""Code mode's tool that runs a program (its record: `router.code_mode.meta`)."""
MAX_K = 50

_SEARCH_DESCRIPTION = (
    "Find the tools for a task among every connected server's tools (only a few are listed). "
    "Describe one task in plain words: the goal, what it acts on, and the product or server "
    'if known ("create an issue on GitHub", "remember that Alice works at Acme"), not a '
    "guessed tool name. Matches come back with full input schemas; call one with call_tool. "
    "If the answer says no tool matches well, search again in other words before concluding "
    "there is none. For several steps, search for each."
)
"""What a model reads before it writes a query: one task, the goal and its object and the
product, as the ranking model was trained to read (benchmarks/data/peoples_requests)."""
_CALL_DESCRIPTION = (
    "Call a tool found with search_tools: give its exact name and its arguments as an object "
    "that matches the tool's input schema."
)
_READ_DESCRIPTION = (
    "Read on in a tool result that was cut to fit the result limit: give the handle and "
    "offset its marker named; the next part comes back, with the offset of the one after."
)


def meta_record(name: str, description: str, schema: dict[str, object]) -> ToolRecord:
    """One of the router's own tools, as a catalog record."""
    return ToolRecord(
        server="mcp-router",
        name=name,
        qualified_name=name,
        description=description,
        input_schema=schema,
        annotations=None,
        search_text=description,
        fingerprint=fingerprint_text(name + description),
    )


def search_schema(default_k: int) -> dict[str, object]:
    """The input schema of `search_tools`, in every mode."""
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "One task in plain words: the goal, what it acts on, and the "
                "product or server if known.",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_K,
                "description": f"How many tools to return (default {default_k}); ask for "
                "more when the right one is missing.",
            },
        },
        "required": ["query"],
    }


def search_tools_record(default_k: int, servers: str = "") -> ToolRecord:
    """`search_tools`, its description followed by `servers`: the directory of the servers
    behind the router (`router.server.listing.directory`), "" for none."""
    description = f"{_SEARCH_DESCRIPTION}\n\n{servers}" if servers else _SEARCH_DESCRIPTION
    return meta_record(SEARCH_TOOLS, description, search_schema(default_k))


def call_tool_record() -> ToolRecord:
    return meta_record(
        CALL_TOOL,
        _CALL_DESCRIPTION,
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's exact name."},
                "arguments": {
                    "type": "object",
                    "description": "The tool's arguments.",
                    "additionalProperties": True,
                },
            },
            "required": ["name"],
        },
    )


def read_result_record() -> ToolRecord:
    return meta_record(
        READ_RESULT,
        _READ_DESCRIPTION,
        {
            "type": "object",
            "properties": {
                "handle": {"type": "string", "description": "The handle a cut result named."},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Where to read on, in characters (the marker gives it).",
                },
            },
            "required": ["handle", "offset"],
            "additionalProperties": False,
        },
    )


def meta_tool_records(default_k: int, servers: str = "") -> tuple[ToolRecord, ToolRecord]:
    return (search_tools_record(default_k, servers), call_tool_record())


def search_arguments(arguments: Mapping[str, Any]) -> tuple[str, int | None]:
    """`search_tools`' query and k, as its schema says (`InvalidParams` naming the field)."""
    query = arguments.get("query")
    k = arguments.get("k")
    if not isinstance(query, str) or not query.strip():
        raise InvalidParams("search_tools: missing required field 'query'")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K):
        raise InvalidParams(f"search_tools: field 'k' must be an integer 1..{MAX_K}")
    return query, k
