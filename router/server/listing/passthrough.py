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
when the listing changes (an upstream added, removed or changed a tool, or came up), in this
mode and in the others, whose listing (the pins and the meta-tools) changes when a pinned tool
changes or a config applied while serving changes `pin` or `k`. Under `2026-07-28` change
notifications travel only on `subscriptions/listen` (`router.server.sessions.listen`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
from collections.abc import Callable, Sequence

import mcp_types as types
from mcp.server.connection import Connection
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.accounting.formats import to_mcp
from router.core.catalog import ToolRecord
from router.server.listing.index import LiveIndex, Snapshot
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
    own = definitions.get(record.called_as)
    if own is None:  # the upstream re-listed without it; the index has not caught up yet
        return types.Tool.model_validate(to_mcp(record))
    if record.shaping is not None:  # a config transform: the record is what the model sees
        shaped = types.Tool.model_validate(to_mcp(record))
        return shaped.model_copy(update={"icons": own.icons, "execution": own.execution})
    update: dict[str, object] = {"name": record.qualified_name}
    if record.app_uri is not None:  # its `ui://` resource as the router lists it
        update["meta"] = {**(own.meta or {}), "ui": record.shown_ui}
    return own.model_copy(update=update)


def listing_key(tools: list[types.Tool]) -> str:
    """Changes whenever anything a client sees in the listing changes."""
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


def records_key(records: Sequence[ToolRecord]) -> str:
    """`listing_key` of a listing of catalog records (the pins and the meta-tools)."""
    dumped = [to_mcp(record) for record in records]
    return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


class ListChanges:
    """The connections that listed the tools, each told when the listing changes after it
    listed (when it listed during a change, it is told too: at worst once more than needed)."""

    KEPT = 16
    """Listing keys of the last generations kept, to compare what each connection saw."""

    def __init__(self) -> None:
        # Per handshake-era connection, the last generation checked before it listed.
        self._seen: weakref.WeakKeyDictionary[Connection, int] = weakref.WeakKeyDictionary()
        self._keys: dict[int, str] = {}
        self._checked = 0

    def listed(self, connection: Connection) -> None:
        """`connection` has the listing now, so it wants to hear when it changes."""
        if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._seen[connection] = self._checked

    async def run(self, index: LiveIndex, listing: Callable[[], str]) -> None:
        """Announce every change of the listing (`listing` gives its key) to the connections
        that listed it, checked at every index swap; run this for the router's life."""
        self._checked = index.snapshot.generation
        self._keys = {self._checked: listing()}
        while True:
            await index.wait_changed()
            generation, key = index.snapshot.generation, listing()
            self._keys[generation] = key
            for old in sorted(self._keys)[: -self.KEPT]:
                del self._keys[old]
            self._checked = generation
            stale = [c for c, seen in list(self._seen.items()) if self._keys.get(seen) != key]
            if stale:
                logger.info("tool listing changed: telling %d clients", len(stale))
            for connection in stale:
                self._seen[connection] = generation
                await connection.notify(LIST_CHANGED, None)  # best effort: it never raises
