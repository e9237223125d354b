"""Pass-through mode (`router.mode: "all"`): every upstream tool listed, as the upstream gave it.

For small setups and for checking that the router is transparent. `tools/list` is the whole
catalog in its fixed order (upstreams by name, each in its own listing order), every tool the
upstream's own definition (icons, `_meta`, `execution` and all) under its router name, which
is the upstream's name for a server with `"prefix": false`. The meta-tools are not listed: a
host that sees every tool has nothing to search for, and an upstream may have a tool by
either name (such a tool is called, not the meta-tool; the meta-tools still answer calls by
name otherwise). A query in the request does not narrow the listing in this mode.

One page: the specification lets a server answer without a cursor, every client takes it,
and the mode is meant for catalogs small enough to list whole.

Clients on a handshake revision that listed the tools get `notifications/tools/list_changed`
when the listing changes (an upstream added, removed or changed a tool, or came up). Under
`2026-07-28` change notifications travel only on `subscriptions/listen`, which the router does
not serve; such clients re-list.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref

import mcp_types as types
from mcp.server.connection import Connection
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.accounting.formats import to_mcp
from router.catalog import ToolRecord
from router.server.index import LiveIndex, Snapshot
from router.upstream import UpstreamPool

logger = logging.getLogger(__name__)

LIST_CHANGED = "notifications/tools/list_changed"


def every_tool(snapshot: Snapshot, pool: UpstreamPool) -> list[types.Tool]:
    """The whole listing: each upstream's own tool definition under its router name."""
    definitions = {
        name: {tool.name: tool for tool in upstream.listing.tools}
        for name, upstream in pool.upstreams.items()
    }
    return [_listed(record, definitions.get(record.server, {})) for record in snapshot.catalog]


def _listed(record: ToolRecord, definitions: dict[str, types.Tool]) -> types.Tool:
    own = definitions.get(record.name)
    if own is None:  # the upstream re-listed without it; the index has not caught up yet
        return types.Tool.model_validate(to_mcp(record))
    return own.model_copy(update={"name": record.qualified_name})


def listing_key(tools: list[types.Tool]) -> str:
    """Changes whenever anything a client sees in the listing changes."""
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


class ListChanges:
    """The connections that listed the tools, told when the listing changes."""

    def __init__(self) -> None:
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()

    def listed(self, connection: Connection) -> None:
        """`connection` has the listing now, so it wants to hear when it changes."""
        if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._connections.add(connection)

    async def run(self, index: LiveIndex, pool: UpstreamPool) -> None:
        """Announce every change of the listing to the connections that listed it; run this
        for the router's life."""
        shown = listing_key(every_tool(index.snapshot, pool))
        while True:
            await index.wait_changed()
            key = listing_key(every_tool(index.snapshot, pool))
            if key == shown:
                continue
            shown = key
            connections = list(self._connections)
            logger.info("tool listing changed: telling %d clients", len(connections))
            for connection in connections:
                await connection.notify(LIST_CHANGED, None)  # best effort: it never raises
