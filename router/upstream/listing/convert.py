"""SDK tool objects to the catalog's `ToolSpec`: the edge where `mcp_types` stops."""

from __future__ import annotations

import mcp_types as types

from router.core.apps import ui_block
from router.core.catalog import ToolSpec


def server_description(info: types.Implementation | None, instructions: str | None) -> str | None:
    """What the server says about itself: its title and description, then its instructions."""
    parts: list[str] = []
    if info is not None:
        if info.title and info.title != info.name:
            parts.append(info.title)
        if info.description:
            parts.append(info.description)
    if instructions and instructions.strip():
        parts.append(instructions.strip())
    return "\n".join(parts) or None


def tool_spec(server: str, tool: types.Tool, description_of_server: str | None) -> ToolSpec:
    """One upstream tool as the catalog takes it."""
    annotations = (
        tool.annotations.model_dump(by_alias=True, mode="json", exclude_none=True)
        if tool.annotations is not None
        else None
    )
    title = tool.title or (tool.annotations.title if tool.annotations is not None else None)
    return ToolSpec(
        server=server,
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        annotations=annotations or None,
        title=title,
        server_description=description_of_server,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        # MCP Apps: kept whatever the upstream advertised (an SDK server on a handshake
        # revision declares no extension, yet its tools carry `_meta.ui`)
        ui=ui_block(tool.meta),
    )
