"""Upstream resources and prompts, gathered so that nothing an upstream offers is hidden.

Prompts are named `{server}__{prompt}` like tools. Resources keep their URIs (clients read
and show them) and get their names prefixed with the server; a URI two upstreams share is
kept by the first upstream in name order and rewritten as `mcp-router://{server}/{uri}` for
the others. Reads and gets are routed back to the owning upstream.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server.context import ServerRequestContext

from router.errors import InvalidParams
from router.naming import qualify
from router.server.state import RouterState
from router.upstream import Upstream

Context = ServerRequestContext[RouterState, Any]
_REWRITTEN = re.compile(r"^mcp-router://([^/]+)/(.+)$")


@dataclass
class _Routes:
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)
    uri_owner: dict[str, str] = field(default_factory=dict)
    prompt_owner: dict[str, tuple[str, str]] = field(default_factory=dict)
    template_owner: list[tuple[re.Pattern[str], str]] = field(default_factory=list)


def _routes(upstreams: Mapping[str, Upstream]) -> _Routes:
    routes = _Routes()
    for server in sorted(upstreams):
        listing = upstreams[server].listing
        for resource in listing.resources:
            uri = str(resource.uri)
            if uri in routes.uri_owner:
                uri = f"mcp-router://{server}/{quote(uri, safe='')}"
            routes.uri_owner[uri] = server
            routes.resources.append(
                resource.model_copy(update={"uri": uri, "name": f"{server}__{resource.name}"})
            )
        for template in listing.resource_templates:
            routes.templates.append(
                template.model_copy(update={"name": f"{server}__{template.name}"})
            )
            routes.template_owner.append((_template_pattern(template.uri_template), server))
        for prompt in listing.prompts:
            name = qualify(server, prompt.name)
            routes.prompt_owner[name] = (server, prompt.name)
            routes.prompts.append(prompt.model_copy(update={"name": name}))
    return routes


def _template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 URI template as a regex: each `{...}` expression matches anything."""
    parts = re.split(r"\{[^}]*\}", template)
    return re.compile("^" + ".+".join(re.escape(p) for p in parts) + "$")


async def list_resources(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=_routes(ctx.lifespan_context.pool.upstreams).resources
    )


async def list_resource_templates(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    templates = _routes(ctx.lifespan_context.pool.upstreams).templates
    return types.ListResourceTemplatesResult(resource_templates=templates)


async def read_resource(
    ctx: Context, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    pool = ctx.lifespan_context.pool
    routes = _routes(pool.upstreams)
    uri = str(params.uri)
    owner = routes.uri_owner.get(uri)
    upstream_uri = uri
    rewritten = _REWRITTEN.match(uri)
    if rewritten and owner is not None:
        upstream_uri = unquote(rewritten.group(2))
    if owner is None:
        owner = next((s for pattern, s in routes.template_owner if pattern.match(uri)), None)
    if owner is None:
        raise InvalidParams(f"unknown resource {uri!r}")  # -32602, as SEP-2164 settled
    return await pool.read_resource(owner, upstream_uri)


async def list_prompts(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=_routes(ctx.lifespan_context.pool.upstreams).prompts)


async def get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    pool = ctx.lifespan_context.pool
    owner = _routes(pool.upstreams).prompt_owner.get(params.name)
    if owner is None:
        raise InvalidParams(f"unknown prompt {params.name!r}")
    server, name = owner
    return await pool.get_prompt(server, name, params.arguments)
