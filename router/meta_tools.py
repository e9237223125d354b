"""The router's own tools: `search_tools` and `call_tool` (docs/architecture.md#the-surfaces).

They are defined as `ToolRecord`s so that token accounting prices them exactly like
upstream tools.
"""

from __future__ import annotations

from router.catalog import ToolRecord, fingerprint_text

SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"
MAX_K = 50

_SEARCH_DESCRIPTION = (
    "Find the tools that can do a task. Describe the task in plain words; the best matching "
    "tools come back with their full input schemas. Then call one with call_tool (or directly "
    "by its name if your client lists it)."
)
_CALL_DESCRIPTION = (
    "Call a tool found with search_tools: give its exact name and its arguments as an object "
    "that matches the tool's input schema."
)


def _record(name: str, description: str, schema: dict[str, object]) -> ToolRecord:
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


def search_tools_record(default_k: int) -> ToolRecord:
    return _record(
        SEARCH_TOOLS,
        _SEARCH_DESCRIPTION,
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The task, in plain words."},
                "k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_K,
                    "description": f"How many tools to return (default {default_k}).",
                },
            },
            "required": ["query"],
        },
    )


def call_tool_record() -> ToolRecord:
    return _record(
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


def meta_tool_records(default_k: int) -> tuple[ToolRecord, ToolRecord]:
    return (search_tools_record(default_k), call_tool_record())
