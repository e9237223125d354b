"""Converters from MCP tool schemas to the OpenAI and Anthropic tool formats.

- MCP (`tools/list` entry): `{"name", "description", "inputSchema"}`, with `title`,
  `outputSchema` and `annotations` when the upstream gave them (hosts pay for those too)
- OpenAI (Chat Completions `tools`): `{"type": "function", "function": {"name", "description",
  "parameters"}}`
- Anthropic (Messages `tools`): `{"name", "description", "input_schema"}`

A schema that is not a JSON Schema object (missing, or a dataset's dialect such as BFCL's
`"type": "dict"`) is normalised so that every format carries a valid object schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from router.core.catalog import ToolRecord

JsonObject = dict[str, Any]

# Type names some datasets use in place of JSON Schema's.
_TYPE_ALIASES = {
    "dict": "object",
    "float": "number",
    "int": "integer",
    "double": "number",
    "long": "integer",
    "tuple": "array",
    "list": "array",
    "bool": "boolean",
    "str": "string",
    "any": None,
    "Any": None,
}


class ToolFormat(StrEnum):
    MCP = "mcp"
    OPENAI = "openai"
    ANTHROPIC = "anthropic"


def normalise_schema(schema: Mapping[str, Any] | None) -> JsonObject:
    """A JSON Schema object for `parameters`/`input_schema`: `{}` becomes an empty object
    schema, dialect type names become JSON Schema's; nothing else changes."""
    if not schema:
        return {"type": "object", "properties": {}}
    normalised = _normalise_node(schema)
    assert isinstance(normalised, dict)
    if normalised.get("type") != "object":
        normalised["type"] = "object"
    normalised.setdefault("properties", {})
    return normalised


def _normalise_node(node: Any) -> Any:
    if isinstance(node, Mapping):
        result = {key: _normalise_node(value) for key, value in node.items()}
        kind = result.get("type")
        if isinstance(kind, str) and kind in _TYPE_ALIASES:
            alias = _TYPE_ALIASES[kind]
            if alias is None:
                del result["type"]
            else:
                result["type"] = alias
        return result
    if isinstance(node, list):
        return [_normalise_node(item) for item in node]
    return node


TAGS_META_KEY = "mcp-router/tags"
"""Where a tool's tags (a config transform's `tags`, `router.shaping`) show in its listing."""


def to_mcp(tool: ToolRecord) -> JsonObject:
    entry: JsonObject = {
        "name": tool.qualified_name,
        "description": tool.description,
        "inputSchema": normalise_schema(tool.input_schema),
    }
    if tool.title:
        entry["title"] = tool.title
    if tool.output_schema:
        entry["outputSchema"] = tool.output_schema
    if tool.annotations:
        entry["annotations"] = tool.annotations
    meta: JsonObject = {}
    if tool.tags:
        meta[TAGS_META_KEY] = list(tool.tags)
    ui = tool.shown_ui
    if ui:  # MCP Apps: the tool's `ui://` resource under the URI the router lists
        meta["ui"] = ui
    if meta:
        entry["_meta"] = meta
    return entry


def to_openai(tool: ToolRecord) -> JsonObject:
    return {
        "type": "function",
        "function": {
            "name": tool.qualified_name,
            "description": tool.description,
            "parameters": normalise_schema(tool.input_schema),
        },
    }


def to_anthropic(tool: ToolRecord) -> JsonObject:
    return {
        "name": tool.qualified_name,
        "description": tool.description,
        "input_schema": normalise_schema(tool.input_schema),
    }


_CONVERTERS = {
    ToolFormat.MCP: to_mcp,
    ToolFormat.OPENAI: to_openai,
    ToolFormat.ANTHROPIC: to_anthropic,
}


def to_format(tool: ToolRecord, fmt: ToolFormat | str) -> JsonObject:
    return _CONVERTERS[ToolFormat(fmt)](tool)


def tool_list_payload(tools: Iterable[ToolRecord], fmt: ToolFormat | str) -> Any:
    """What the host actually sends: `{"tools": [...]}` for MCP, a bare list otherwise."""
    entries = [to_format(tool, fmt) for tool in tools]
    return {"tools": entries} if ToolFormat(fmt) is ToolFormat.MCP else entries


def serialise(payload: Any) -> str:
    """Compact JSON, as SDKs put it on the wire; token counts are of this text."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
