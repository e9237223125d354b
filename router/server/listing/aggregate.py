"""Upstream resources and prompts, gathered so that nothing an upstream offers is hidden.

Prompts are named `{server}__{prompt}` like tools. Resources keep their URIs (clients read
and show them) and get their names prefixed with the server; a URI two upstreams share is
kept by the first upstream in name order and rewritten as `mcp-router://{server}/{uri}` for
the others. A server with `"prefix": false` keeps its prompt and resource names; an
unprefixed prompt name another server's prompt already has is a clash, named as for tools
(`router.naming`): it keeps its prefixed name and the clash is logged when prompts are
listed. Reads, gets and completions are routed back to the owning upstream, and a host's
`resources/subscribe` becomes a watch there (`router.server.sessions.subscriptions`). A read or a
prompt over the owning server's result limit is cut like a tool result
(`router.server.results.limits`).

Everything here is served from the upstreams the caller may see
(`router.server.access.authorization.visible_upstreams`: the policy, the endpoint and the
profiles, one rule with tools): another server's resources, templates and prompts are not
listed, and reading, getting, completing or subscribing to one is the same -32602 "unknown"
as for one that never existed. Each request that reaches an upstream is metered and audited
as a tool call is (`router.server.calls.passage`).
"""

from __future__ import annotations

import logging

import mcp_types as types

from router.core.errors import InvalidParams
from router.server.access.authorization import visible_upstreams
from router.server.calls.passage import passed
from router.server.lifecycle.requests import Context, connection, is_modern
from router.server.listing.routes import Routes, owner_of_uri, served_routes
from router.server.results.limits import limit_prompt, limit_resource
from router.upstream.connection.capabilities import for_host
from router.upstream.connection.host_requests import InputAnswers

logger = logging.getLogger(__name__)


def _routes(ctx: Context) -> Routes:
    """The resources, templates and prompts of the upstreams the caller may see; `ui://`
    URIs as the tools name them (`router.server.listing.routes`)."""
    state = ctx.lifespan_context
    upstreams = state.pool.upstreams
    return served_routes(state.snapshot.ui_uris, upstreams, visible_upstreams(upstreams))


async def list_resources(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=_routes(ctx).resources)


async def list_resource_templates(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    templates = _routes(ctx).templates
    return types.ListResourceTemplatesResult(resource_templates=templates)


async def read_resource(
    ctx: Context, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult | types.InputRequiredResult:
    uri = str(params.uri)

    async def resolve() -> tuple[str, str]:
        try:
            return owner_of_uri(_routes(ctx), uri)
        except InvalidParams:
            if not await _waited_for_upstreams(ctx):
                raise
            return owner_of_uri(_routes(ctx), uri)

    async def forward(
        owner: str, upstream_uri: str
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        async with ctx.lifespan_context.relay.calling(ctx, owner):
            with for_host(ctx.session.client_capabilities):
                result = await ctx.lifespan_context.pool.read_resource(
                    owner,
                    upstream_uri,
                    handshake_host=not is_modern(ctx),  # `router.upstream.connection.twins`
                    answers=_answers(ctx, params),
                )
        if isinstance(result, types.InputRequiredResult):
            return result
        if upstream_uri != uri:  # the contents under the URI the host asked for
            result = _as_listed(result, upstream_uri, uri)
        limit = ctx.lifespan_context.settings.result_tokens_for(owner)
        return await limit_resource(result, uri, limit)

    return await passed(ctx, "resource-read", uri, {"uri": uri}, resolve, forward)


def _as_listed(result: types.ReadResourceResult, own: str, listed: str) -> types.ReadResourceResult:
    """A read's contents named by the URI the router lists (an app's `_meta.ui` intact)."""
    contents = [
        c.model_copy(update={"uri": listed}) if str(c.uri) == own else c for c in result.contents
    ]
    return result.model_copy(update={"contents": contents})


async def _waited_for_upstreams(ctx: Context) -> bool:
    """A name unknown while upstreams are still starting waits for them (at most until the
    start-up deadline), as a tool's does; whether there was anything to wait for."""
    readiness = ctx.lifespan_context.readiness
    if readiness.coverage().complete:
        return False
    await readiness.until_covered()
    return True


def _answers(ctx: Context, params: types.InputResponseRequestParams) -> InputAnswers | None:
    """A 2026-07-28 host's round: its answers and the upstream's state, passed on as they are
    (`router.upstream.connection.rounds`); None for a handshake-era host, whose questions are
    relayed."""
    if not is_modern(ctx):
        return None
    return InputAnswers(params.input_responses, params.request_state)


async def subscribe(ctx: Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
    """`resources/subscribe`: the host hears `notifications/resources/updated` for the URI
    whenever its upstream says it changed (`router.server.sessions.subscriptions`)."""
    state = ctx.lifespan_context
    uri = str(params.uri)

    async def resolve() -> tuple[str, str]:
        return owner_of_uri(_routes(ctx), uri)

    async def forward(owner: str, upstream_uri: str) -> types.EmptyResult:
        host = connection(ctx)
        state.subscriptions.subscribe(host, uri, state.pool.upstream(owner), upstream_uri)
        return types.EmptyResult()

    return await passed(ctx, "resource-subscribe", uri, {"uri": uri}, resolve, forward)


async def unsubscribe(ctx: Context, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    """`resources/unsubscribe`; a URI never subscribed to, or gone, is nothing to end. On the
    trail, never metered: it only ends upstream work."""
    state = ctx.lifespan_context
    uri = str(params.uri)
    try:
        found = owner_of_uri(_routes(ctx), uri)
    except InvalidParams:
        return types.EmptyResult()

    async def resolve() -> tuple[str, str]:
        return found

    async def forward(owner: str, upstream_uri: str) -> types.EmptyResult:
        state.subscriptions.unsubscribe(connection(ctx), state.pool.upstream(owner), upstream_uri)
        return types.EmptyResult()

    return await passed(
        ctx, "resource-unsubscribe", uri, {"uri": uri}, resolve, forward, metered=False
    )


async def list_prompts(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    routes = _routes(ctx)
    for clash in routes.prompt_clashes:
        logger.error("%s", clash.describe("prompt"))
    return types.ListPromptsResult(prompts=routes.prompts)


async def get_prompt(
    ctx: Context, params: types.GetPromptRequestParams
) -> types.GetPromptResult | types.InputRequiredResult:
    async def resolve() -> tuple[str, str]:
        owner = _routes(ctx).prompt_owner.get(params.name)
        if owner is None and await _waited_for_upstreams(ctx):
            owner = _routes(ctx).prompt_owner.get(params.name)
        if owner is None:
            raise InvalidParams(f"unknown prompt {params.name!r}")
        return owner

    async def forward(server: str, name: str) -> types.GetPromptResult | types.InputRequiredResult:
        async with ctx.lifespan_context.relay.calling(ctx, server):
            with for_host(ctx.session.client_capabilities):
                result = await ctx.lifespan_context.pool.get_prompt(
                    server,
                    name,
                    params.arguments,
                    handshake_host=not is_modern(ctx),  # `router.upstream.connection.twins`
                    answers=_answers(ctx, params),
                )
        if isinstance(result, types.InputRequiredResult):
            return result
        limit = ctx.lifespan_context.settings.result_tokens_for(server)
        return await limit_prompt(result, limit)

    arguments = dict(params.arguments or {})
    return await passed(ctx, "prompt-get", params.name, arguments, resolve, forward)


_Ref = types.PromptReference | types.ResourceTemplateReference


async def complete(ctx: Context, params: types.CompleteRequestParams) -> types.CompleteResult:
    """`completion/complete` for an upstream prompt's or resource template's argument, asked
    of the upstream that owns it under the name it gave."""
    ref = params.ref
    asked = ref.name if isinstance(ref, types.PromptReference) else ref.uri

    async def resolve() -> tuple[str, _Ref]:
        routes = _routes(ctx)
        if isinstance(ref, types.PromptReference):
            owner = routes.prompt_owner.get(ref.name)
            if owner is None:
                raise InvalidParams(f"unknown prompt {ref.name!r}")
            return owner[0], ref.model_copy(update={"name": owner[1]})
        found = routes.template_uri_owner.get(ref.uri)
        if found is None:
            raise InvalidParams(f"unknown resource template {ref.uri!r}")
        return found, ref

    context = params.context.arguments if params.context is not None else None
    argument = {"name": params.argument.name, "value": params.argument.value}

    async def forward(server: str, upstream_ref: _Ref) -> types.CompleteResult:
        return await ctx.lifespan_context.pool.upstream(server).complete(
            upstream_ref, argument, context
        )

    arguments = {"argument": argument, "context": context}
    return await passed(ctx, "completion", asked, arguments, resolve, forward)


async def set_logging_level(ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """The host's level for the upstreams' log messages relayed to it (handshake revisions;
    the router sends none of its own)."""
    ctx.lifespan_context.relay.set_log_level(ctx, params.level)
    return types.EmptyResult()
