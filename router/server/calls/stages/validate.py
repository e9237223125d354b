"""Validate: the arguments against the tool's JSON Schema, before anything is asked or sent;
a field that breaks it is an `InvalidParams` naming the field (`router.server.calls.validation`)."""

from __future__ import annotations

from router.server.calls.call import ToolCall
from router.server.calls.validation import validate_arguments


async def validate(call: ToolCall) -> None:
    tool = call.tool
    validate_arguments(tool.qualified_name, tool.input_schema, call.arguments)
