"""`tools/call`: which tool a call names. The router's own tools (`search_tools`,
`read_result`, `call_tool`'s wrapping, code mode's `search_tools` and `execute`) are answered
here; every other name is an upstream's tool and goes through the pipeline
(`router.server.calls.pipeline`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import mcp_types as types

from router.core.errors import InvalidParams
from router.core.meta_tools import (
    CALL_TOOL,
    READ_RESULT,
    SEARCH_TOOLS,
    read_result_record,
    search_arguments,
)
from router.server.calls import audit
from router.server.calls.call import Answer
from router.server.calls.pipeline import run_call, run_program_call
from router.server.calls.stages.limit import owner
from router.server.calls.validation import validate_arguments
from router.server.lifecycle.errors import errors_as_mcp
from router.server.lifecycle.requests import Context, connection, is_modern
from router.server.lifecycle.state import RouterState
from router.server.listing.answer import search
from router.server.listing.rendering import structured_results, text_results
from router.upstream.connection.host_requests import InputAnswers


@errors_as_mcp
async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> Answer:
    """`tools/call` (registered by method: the SDK's `on_call_tool` knows no task answer)."""
    state = ctx.lifespan_context
    arguments = dict(params.arguments or {})
    answers = InputAnswers(params.input_responses, params.request_state)
    if state.settings.mode == "all" and state.snapshot.catalog.get(params.name) is not None:
        # pass-through lists upstream tools only, and one may be named like a meta-tool
        return await run_call(ctx, state, params.name, arguments, answers, may_be_task=True)
    if state.code is not None and state.settings.mode == "code":
        from router.server.code_mode import tools as code_tools  # loaded only in code mode

        if params.name in code_tools.NAMES:  # code mode's own tools
            forward = run_program_call
            run = partial(code_tools.call, ctx, state, params.name, arguments, answers, forward)
            if state.audit is None or params.name == SEARCH_TOOLS:
                return await run()
            # the program's run on the trail; each tool call it makes is a line of its own
            asked = audit.Request(ctx, "code-run", None, params.name, arguments)
            return await audit.audited_request(
                state.audit, asked, run, audit.result_outcome, audit.refusal
            )
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
        return await run_call(ctx, state, name, dict(inner), answers, may_be_task=True)
    return await run_call(ctx, state, params.name, arguments, answers, may_be_task=True)


async def _read_result(
    ctx: Context, state: RouterState, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    """The next part of a cut result (`router.server.results.kept`), for its own caller only."""
    validate_arguments(READ_RESULT, _READ_SCHEMA, arguments)
    handle, offset = str(arguments["handle"]), int(arguments["offset"])
    return await state.kept.read(owner(ctx, state), handle, offset)


_READ_SCHEMA = read_result_record().input_schema


async def _search_tools(
    ctx: Context, state: RouterState, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    query, k = search_arguments(arguments)
    found = await search(state.searcher, query, k, connection=connection(ctx), nearby=True)
    if state.settings.mode == "dynamic" and not is_modern(ctx):
        names = tuple(r.qualified_name for r in found.results)
        if state.connections.listed.get(connection(ctx)) != names:
            state.connections.listed[connection(ctx)] = names
            await ctx.session.send_tool_list_changed()
    return types.CallToolResult(
        content=[types.TextContent(text=text_results(found))],
        structured_content=structured_results(found),
    )
