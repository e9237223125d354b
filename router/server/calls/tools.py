"""`tools/list` and `tools/call`: the search, query-scoped and dynamic surfaces.

- search (default): `tools/list` = pins + `search_tools` + `call_tool`, identical for every
  session and query, in a fixed order (prompt caches depend on it).
- query-scoped: `tools/list` with `params.query` (SEP-1821 draft) or
  `params._meta["mcp-router/query"]` returns the top-k for that query plus the meta-tools.
- dynamic (handshake revisions only): after `search_tools`, that session's listing also holds
  the last top-k, announced with `notifications/tools/list_changed`.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.accounting.formats import to_mcp
from router.core.catalog import ToolRecord
from router.core.errors import InvalidParams, ToolHeld, UpstreamError
from router.core.meta_tools import (
    CALL_TOOL,
    MAX_K,
    READ_RESULT,
    SEARCH_TOOLS,
    read_result_record,
    search_arguments,
)
from router.core.tracing import failed, span
from router.policy.rules import Ruling, Verdict
from router.sdk.internals import connection_of
from router.server.access.authorization import current_access
from router.server.calls.approval import Approved
from router.server.calls.held_calls import HeldCall
from router.server.calls.pin_approval import release
from router.server.calls.validation import validate_arguments
from router.server.code_mode import tools as code_tools
from router.server.lifecycle.errors import errors_as_mcp, tool_error_result
from router.server.lifecycle.observe import surface_of
from router.server.lifecycle.settings import authorize_call, view_of
from router.server.lifecycle.state import RouterState
from router.server.listing.passthrough import every_tool
from router.server.listing.rendering import structured_results, text_results
from router.server.results.kept import Keeping, Owner
from router.server.results.limits import limit_result
from router.upstream.connection.capabilities import for_host
from router.upstream.connection.host_requests import InputAnswers

logger = logging.getLogger(__name__)

QUERY_META_KEY = "mcp-router/query"
K_META_KEY = "mcp-router/k"

Context = ServerRequestContext[RouterState, Any]


def to_sdk_tool(record: ToolRecord) -> types.Tool:
    return types.Tool.model_validate(to_mcp(record))


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


def _is_modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _connection(ctx: Context) -> Connection:
    """What lives as long as the client's connection (see `router.sdk.internals`)."""
    return connection_of(ctx.session)


@errors_as_mcp
async def list_tools(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    state = ctx.lifespan_context
    if state.settings.mode == "all":  # pass-through: every tool, no meta-tools (passthrough.py)
        await state.readiness.until_covered()
        state.list_changes.listed(_connection(ctx))
        view = state.settings.visibility.view()
        every = [
            tool
            for tool, record in zip(
                every_tool(state.snapshot, state.pool), state.snapshot.catalog, strict=True
            )
            if state.settings.visibility.permits(view, record)
        ]
        state.metrics.listed(surface_of(ctx), len(every))  # nothing saved: every tool listed
        return types.ListToolsResult(tools=every)
    query, k = _listing_query(ctx)
    if state.index.pins:
        await state.readiness.until_covered()  # the pinned tools belong in the very first listing
    snapshot = state.snapshot
    view = state.settings.visibility.view()
    listed: list[ToolRecord] = state.settings.visibility.visible(view, snapshot.pinned)
    if query is not None:
        listed += [r.tool for r in await state.search(query, k) if r.tool not in listed]
    elif state.settings.mode == "dynamic" and not _is_modern(ctx):
        for name in state.connections.listed.get(_connection(ctx), ()):
            record = snapshot.catalog.get(name)
            if (
                record is not None
                and record not in listed
                and state.settings.visibility.permits(view, record)
            ):
                listed.append(record)
    sent = (*listed, *state.meta_tools)
    state.list_changes.listed(_connection(ctx))  # told when the pins or `k` change
    state.metrics.listing_sent(surface_of(ctx), snapshot.generation, snapshot.catalog.records, sent)
    return types.ListToolsResult(tools=[to_sdk_tool(r) for r in sent])


@errors_as_mcp
async def call_tool(
    ctx: Context, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    state = ctx.lifespan_context
    arguments = dict(params.arguments or {})
    answers = InputAnswers(params.input_responses, params.request_state)
    if state.settings.mode == "all" and state.snapshot.catalog.get(params.name) is not None:
        # pass-through lists upstream tools only, and one may be named like a meta-tool
        return await forward(ctx, state, params.name, arguments, answers)
    if state.code is not None and params.name in code_tools.NAMES:  # code mode's own tools
        return await code_tools.call(ctx, state, params.name, arguments, answers, forward)
    if params.name == SEARCH_TOOLS:
        return await _search_tools(ctx, state, arguments)
    if params.name == READ_RESULT:
        return await _read_result(ctx, state, arguments)
    if params.name == CALL_TOOL:
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidParams("call_tool: missing required field 'name'")
        inner = arguments.get("arguments", {})
        if not isinstance(inner, Mapping):
            raise InvalidParams("call_tool: field 'arguments' must be an object")
        if name == READ_RESULT:
            return await _read_result(ctx, state, inner)
        return await forward(ctx, state, name, dict(inner), answers)
    return await forward(ctx, state, params.name, arguments, answers)


async def _read_result(
    ctx: Context, state: RouterState, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    """The next part of a cut result (`router.server.results.kept`), for its own caller only."""
    validate_arguments(READ_RESULT, _READ_SCHEMA, arguments)
    handle, offset = str(arguments["handle"]), int(arguments["offset"])
    return await state.kept.read(_owner(ctx, state), handle, offset)


_READ_SCHEMA = read_result_record().input_schema


def _owner(ctx: Context, state: RouterState) -> Owner:
    """Who a kept result belongs to: the principal, and the connection of a client that
    holds a session (a 2026-07-28 request stands alone: its principal only)."""
    principal = state.settings.visibility.principal()
    connection = None if _is_modern(ctx) else weakref.ref(_connection(ctx))
    return Owner(principal.key if principal is not None else None, connection)


def _keeping(ctx: Context, state: RouterState) -> Keeping | None:
    """How a cut result is kept for `read_result`: in the modes that list `call_tool`, which
    reaches it (pass-through lists no meta-tools, and code mode's programs call tools by
    their names)."""
    if state.settings.mode not in ("search", "dynamic"):
        return None
    return state.kept.keeping(_owner(ctx, state))


async def _search_tools(
    ctx: Context, state: RouterState, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    query, k = search_arguments(arguments)
    results = await state.search(query, k, _connection(ctx))
    held = await state.searcher.held_for(query)
    coverage = state.readiness.coverage().seen_by(current_access().sees_server)
    snapshot = state.snapshot
    hidden = state.settings.visibility.hidden(snapshot, state.settings.visibility.view())
    indexed, flagged = len(snapshot.catalog) - len(hidden), snapshot.flagged
    if state.settings.mode == "dynamic" and not _is_modern(ctx):
        names = tuple(r.qualified_name for r in results)
        if state.connections.listed.get(_connection(ctx)) != names:
            state.connections.listed[_connection(ctx)] = names
            await ctx.session.send_tool_list_changed()
    return types.CallToolResult(
        content=[
            types.TextContent(text=text_results(query, results, coverage, indexed, flagged, held))
        ],
        structured_content=structured_results(query, results, coverage, indexed, flagged, held),
    )


async def forward(
    ctx: Context,
    state: RouterState,
    name: str,
    arguments: dict[str, Any],
    answers: InputAnswers | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """Validate and forward a call to the upstream that owns `name`; results pass unchanged.

    An unknown tool or bad arguments raise `InvalidParams` (a JSON-RPC error); a failing
    upstream gives an `isError` result (see `router.server.lifecycle.errors`). What the upstream
    asks
    of the host on the way reaches the host (`router.server.calls.relay`); between a 2026-07-28
    host and a 2026-07-28 upstream its questions pass as the `InputRequiredResult` they
    are, and the host's retry (`answers`) goes back to it."""
    try:
        record = await state.names.resolve_when_ready(name)  # ToolDenied for a denied tool
    except ToolHeld as hold:  # tool pinning: the user may approve it here, if the host asks
        released = await release(ctx, hold, answers)
        if isinstance(released, types.InputRequiredResult):
            return released
        answers = released
        record = await state.names.resolve_when_ready(name)
    ruling = _authorized(state, record)  # ToolDenied from the moment a reload denies it
    validate_arguments(record.qualified_name, record.input_schema, arguments)
    seal: str | None = None
    if ruling.verdict is Verdict.CONFIRM:
        try:
            limit = state.pool.upstream(record.server).timeouts.call
        except UpstreamError as exc:  # removed by a reload since it was indexed
            return tool_error_result(exc)
        approval = await state.approvals.approve(ctx, record, arguments, ruling, answers, limit)
        if not isinstance(approval, Approved):
            return approval  # the user's no, a host that cannot ask, or the question itself
        answers, seal = approval.answers, approval.seal
        _authorized(state, record)  # still, under a config applied while the user was asked
    # Relayed only when the host asked (the upstream's progress still pushes the call
    # timeout back, `router.upstream.failures.ProgressClock`).
    progress = ctx.session.report_progress if _wants_progress(ctx) else None
    attributes = {"mcp_router.upstream": record.server, "gen_ai.tool.name": record.name}
    # The SDK's client span inside this one carries the trace on in the upstream's `_meta`.
    with span(f"mcp-router forward {record.qualified_name}", attributes) as current:
        try:
            with state.metrics.upstream_call(record.server):
                if _is_modern(ctx) and seal is None and _held_here(state, record, answers):
                    held = await _held(ctx, state, record, arguments, answers, progress)
                    return await _limited(ctx, state, record, held)
                async with state.relay.calling(ctx, record.server):
                    with for_host(ctx.session.client_capabilities):
                        if answers is not None and _is_modern(ctx):
                            result = await state.pool.call_tool_round(
                                record.server,
                                record.name,
                                arguments,
                                answers=answers,
                                progress_callback=progress,
                            )
                        else:
                            result = await state.pool.call_tool(
                                record.server,
                                record.name,
                                arguments,
                                progress_callback=progress,
                                handshake_host=not _is_modern(ctx),
                            )
        except UpstreamError as exc:
            logger.warning("call to %s failed: %s", record.qualified_name, exc)
            failed(current, str(exc))
            return tool_error_result(exc)
        if isinstance(result, types.CallToolResult) and result.is_error:
            state.metrics.tool_error(record.server)
            failed(current, "tool error")
    if isinstance(result, types.InputRequiredResult):
        return result if seal is None else state.approvals.sealed(result, seal)
    if not result.is_error:
        try:
            await state.searcher.learn(_connection(ctx), record)
        except Exception:  # learning is a hint: it must never fail the call it follows
            logger.warning("usage feedback not recorded", exc_info=True)
    tokens = state.settings.result_tokens_for(record.server)
    return await limit_result(result, tokens, _keeping(ctx, state))


def _authorized(state: RouterState, record: ToolRecord) -> Ruling:
    """The call's ruling under the settings in force now (`authorize_call`)."""
    settings = state.settings
    return authorize_call(settings, view_of(settings, current_access().principal), record)


def _held_here(state: RouterState, record: ToolRecord, answers: InputAnswers | None) -> bool:
    """Whether a 2026-07-28 host's call goes through `router.server.calls.held_calls`: its retry
    of a held call, or a call to an upstream reached over the handshake, which asks mid-call
    on a channel such a host does not have."""
    if answers is not None and state.held.is_held(answers.state):
        return True
    return not state.pool.upstream(record.server).speaks_modern


async def _held(
    ctx: Context,
    state: RouterState,
    record: ToolRecord,
    arguments: dict[str, Any],
    answers: InputAnswers | None,
    report: ProgressFnT | None,
) -> types.CallToolResult | types.InputRequiredResult:
    if answers is not None and state.held.is_held(answers.state):
        assert answers.state is not None
        return await state.held.resume(answers.state, record, arguments, answers.responses)
    capabilities = ctx.session.client_capabilities

    async def relayed(progress: float, total: float | None, message: str | None) -> None:
        # Progress goes on the first request's stream, which ends at the first question.
        if report is not None:
            with contextlib.suppress(Exception):
                await report(progress, total, message)

    async def call(held: HeldCall) -> types.CallToolResult:
        try:  # outside `calling`, which keeps a call that timed out counted for a while
            async with state.relay.calling(ctx, record.server, held=held):
                with for_host(capabilities):
                    return await state.pool.call_tool(
                        record.server, record.name, arguments, progress_callback=relayed
                    )
        except UpstreamError as exc:
            logger.warning("call to %s failed: %s", record.qualified_name, exc)
            return tool_error_result(exc)

    return await state.held.start(call, record, arguments)


async def _limited(
    ctx: Context,
    state: RouterState,
    record: ToolRecord,
    result: types.CallToolResult | types.InputRequiredResult,
) -> types.CallToolResult | types.InputRequiredResult:
    if isinstance(result, types.InputRequiredResult):
        return result
    tokens = state.settings.result_tokens_for(record.server)
    return await limit_result(result, tokens, _keeping(ctx, state))


def _wants_progress(ctx: Context) -> bool:
    """Whether the host's request carries a progress token (`_meta.progressToken`)."""
    meta: Mapping[str, Any] = ctx.meta or {}
    return meta.get("progress_token", meta.get("progressToken")) is not None
