"""The prompts and resources the router lists, gathered from every upstream, and which upstream
owns each (`router.server.listing.aggregate` serves them; `router.server.sessions.listen` watches
them).

Prompts are named `{server}__{prompt}` like tools. Resources keep their URIs and get their
names prefixed with the server; a URI two upstreams share is kept by the first upstream in
name order and rewritten as `mcp-router://{server}/{uri}` for the others. A server with
`"prefix": false` keeps its prompt and resource names (a clash is named as for tools).

A `ui://` URI (an MCP app) keeps its scheme, since hosts render only `ui://` resources: it is
named as the tools name it (`router.core.apps.UiUris`, the index's `Snapshot.ui_uris`), the
owners among every upstream, not only the ones the caller sees, so a tool's `resourceUri` and
this listing agree; a `ui://` resource no tool names comes after those, in name order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

import mcp_types as types

from router.core.apps import UI_SCHEME, UiUris
from router.core.errors import InvalidParams
from router.core.naming import NameClash, NameRules, assign_names
from router.upstream import Upstream

_REWRITTEN = re.compile(r"^mcp-router://([^/]+)/(.+)$")


@dataclass
class Routes:
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)
    uri_owner: dict[str, str] = field(default_factory=dict)
    prompt_owner: dict[str, tuple[str, str]] = field(default_factory=dict)
    template_owner: list[tuple[re.Pattern[str], str]] = field(default_factory=list)
    template_uri_owner: dict[str, str] = field(default_factory=dict)
    prompt_clashes: list[NameClash] = field(default_factory=list)
    app_uri: dict[str, str] = field(default_factory=dict)
    """A `ui://` URI as listed -> its owner's own URI."""


def served_routes(
    tools: UiUris, every: Mapping[str, Upstream], visible: Mapping[str, Upstream]
) -> Routes:
    """What `visible` (the upstreams a caller may see) offers, as the router lists it to
    that caller: `ui://` URIs named by the one rule over `every` upstream, after those the
    index's tools name (`tools`: `Snapshot.ui_uris`). Every resource path (listings, reads,
    subscriptions, listen streams' watches) resolves through this, so a hidden first owner
    of a shared `ui://` URI neither hands it to a visible one nor shifts their names."""
    claims = ((s, str(r.uri)) for s, u in every.items() for r in u.listing.resources)
    return routes_of(visible, tools.extended(claims))


def routes_of(upstreams: Mapping[str, Upstream], apps: UiUris) -> Routes:
    """What `upstreams` offer, as the router lists it; `apps`: the `ui://` URIs as the router
    names them among every upstream (`served_routes` makes both)."""
    routes = Routes()
    servers = sorted(upstreams)
    unprefixed = frozenset(s for s in servers if not upstreams[s].server.prefix)
    prompts = [(s, prompt) for s in servers for prompt in upstreams[s].listing.prompts]
    naming = assign_names([(s, p.name) for s, p in prompts], NameRules(unprefixed=unprefixed))
    for server in servers:
        listing = upstreams[server].listing
        prefix = "" if server in unprefixed else f"{server}__"
        for resource in listing.resources:
            uri = own = str(resource.uri)
            if uri.startswith(UI_SCHEME):
                uri = apps.public(server, own)
                routes.app_uri[uri] = own
            elif uri in routes.uri_owner:
                uri = f"mcp-router://{server}/{quote(uri, safe='')}"
            routes.uri_owner[uri] = server
            routes.resources.append(
                resource.model_copy(update={"uri": uri, "name": prefix + resource.name})
            )
        for template in listing.resource_templates:
            routes.templates.append(template.model_copy(update={"name": prefix + template.name}))
            routes.template_owner.append((_template_pattern(template.uri_template), server))
            routes.template_uri_owner.setdefault(template.uri_template, server)
    for (server, prompt), name in zip(prompts, naming.names, strict=True):
        routes.prompt_owner[name] = (server, prompt.name)
        routes.prompts.append(prompt.model_copy(update={"name": name}))
    routes.prompt_clashes = naming.clashes
    return routes


def _template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 URI template as a regex: each `{...}` expression matches anything."""
    parts = re.split(r"\{[^}]*\}", template)
    return re.compile("^" + ".+".join(re.escape(p) for p in parts) + "$")


def owner_of_uri(routes: Routes, uri: str) -> tuple[str, str]:
    """The upstream that owns the resource the router lists as `uri`, and its own URI."""
    owner = routes.uri_owner.get(uri)
    upstream_uri = routes.app_uri.get(uri, uri)
    rewritten = _REWRITTEN.match(uri)
    if rewritten and owner is not None:
        upstream_uri = unquote(rewritten.group(2))
    if owner is None:
        owner = next((s for pattern, s in routes.template_owner if pattern.match(uri)), None)
    if owner is None:
        raise InvalidParams(f"unknown resource {uri!r}", {"uri": uri})  # -32602 (SEP-2164)
    return owner, upstream_uri


def listing_names(
    upstreams: Mapping[str, Upstream], tools: UiUris
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a host's prompt and resource listings hold now: the prompt names, and the
    resource URIs and template URIs (to see when either listing changes)."""
    routes = served_routes(tools, upstreams, upstreams)
    return (
        tuple(prompt.name for prompt in routes.prompts),
        tuple(str(r.uri) for r in routes.resources)
        + tuple(t.uri_template for t in routes.templates),
    )
