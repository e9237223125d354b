"""`tools/list`: the search, query-scoped and dynamic surfaces, and pass-through's whole list.

- search (default): `tools/list` = pins + `search_tools` + `call_tool`, identical for every
  session and query, in a fixed order (prompt caches depend on it).
- query-scoped: `tools/list` with `params.query` (SEP-1821 draft) or
  `params._meta["mcp-router/query"]` returns the top-k for that query plus the meta-tools.
- dynamic (handshake revisions only): after `search_tools`, that session's listing also holds
  the last top-k, announced with `notifications/tools/list_changed`.

Hosts defer MCP tools behind their own tool search (Claude Code by default): the router's
own tools and the pins carry `_meta["anthropic/alwaysLoad"]: true` (`router.always_load`)
so the model never has to search for the search. Query results and a session's searched
tools stay deferrable: `search_tools` already gave the model their schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from router.accounting.formats import to_mcp
from router.core.catalog import ToolRecord
from router.core.errors import InvalidParams
from router.core.meta_tools import MAX_K
from router.server.lifecycle.errors import errors_as_mcp
from router.server.lifecycle.observe import surface_of
from router.server.lifecycle.requests import Context, connection, is_modern
from router.server.listing.passthrough import every_tool

QUERY_META_KEY = "mcp-router/query"
K_META_KEY = "mcp-router/k"
ALWAYS_LOAD_META_KEY = "anthropic/alwaysLoad"
"""Claude Code loads a tool so marked up front instead of behind its tool search."""


def to_sdk_tool(record: ToolRecord, *, keep_loaded: bool = False) -> types.Tool:
    entry = to_mcp(record)
    if keep_loaded:
        meta = entry.get("_meta")
        entry["_meta"] = {**(meta if isinstance(meta, dict) else {}), ALWAYS_LOAD_META_KEY: True}
    return types.Tool.model_validate(entry)


def _listing_query(ctx: Context) -> tuple[str | None, int | None]:
    params: Mapping[str, Any] = ctx.params or {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), Mapping) else {}
    assert isinstance(meta, Mapping)
    query = params.get("query", meta.get(QUERY_META_KEY))
    k = params.get("k", meta.get(K_META_KEY))
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise InvalidParams("tools/list: 'query' must be a non-empty string")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K):
        raise InvalidParams(f"tools/list: 'k' must be an integer from 1 to {MAX_K}")
    return query, k


@errors_as_mcp
async def list_tools(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    state = ctx.lifespan_context
    if state.settings.mode == "all":  # pass-through: every tool, no meta-tools (passthrough.py)
        await state.readiness.until_covered()
        state.list_changes.listed(connection(ctx))
        view = state.settings.visibility.view()
        snapshot = state.snapshot
        every = [
            tool
            for position, (tool, record) in enumerate(
                zip(every_tool(snapshot, state.pool), snapshot.catalog, strict=True)
            )
            # a tool for an MCP app alone is the host's to call, not the model's to see
            if position not in snapshot.app_only and state.settings.visibility.permits(view, record)
        ]
        state.metrics.listed(surface_of(ctx), len(every))  # nothing saved: every tool listed
        return types.ListToolsResult(tools=every)
    query, k = _listing_query(ctx)
    if state.index.pins:
        await state.readiness.until_covered()  # the pinned tools belong in the very first listing
    snapshot = state.snapshot
    view = state.settings.visibility.view()
    listed: list[ToolRecord] = state.settings.visibility.visible(view, state.pinned())
    kept = (*listed, *state.meta_tools) if state.settings.always_load else ()
    if query is not None:
        listed += [r.tool for r in await state.search(query, k) if r.tool not in listed]
    elif state.settings.mode == "dynamic" and not is_modern(ctx):
        for name in state.connections.listed.get(connection(ctx), ()):
            record = snapshot.catalog.get(name)
            if (
                record is not None
                and record not in listed
                and state.settings.visibility.permits(view, record)
            ):
                listed.append(record)
    sent = (*listed, *state.meta_tools)
    state.list_changes.listed(connection(ctx))  # told when the pins or `k` change
    state.metrics.listing_sent(surface_of(ctx), snapshot.generation, snapshot.catalog.records, sent)
    return types.ListToolsResult(tools=[to_sdk_tool(r, keep_loaded=r in kept) for r in sent])
