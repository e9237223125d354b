"""MCP Apps (the `io.modelcontextprotocol/ui` extension) as the catalog sees it, without SDK
types: a tool's `_meta.ui` block, whether the model may see the tool, and the `ui://` URIs of
many upstreams made distinct.

A tool that renders a UI names its `ui://` resource in `_meta.ui.resourceUri`; its
`_meta.ui.visibility` (default `["model", "app"]`) says who may see it: a tool for the app
alone (`["app"]`) is never listed or searched for the model, yet the host calls it for the app.

Two upstreams may both serve `ui://chart/app.html`. Hosts render only `ui://` resources, so
the router's distinct form keeps the scheme: the first upstream in name order keeps the URI,
each other gets `ui://mcp-router/{server}/{rest}` (`{server}` percent-encoded, `{rest}` the
URI after `ui://`). The rule reads every upstream, whatever the caller may see, so a tool's
`resourceUri` and the resource listing agree for every caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from router.core.catalog import Catalog, ToolRecord

EXTENSION_ID = "io.modelcontextprotocol/ui"
"""The MCP Apps extension's identifier (SEP-2133)."""
APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of a `ui://` app resource."""
UI_SCHEME = "ui://"
ROUTER_AUTHORITY = "mcp-router"
"""The authority of the router's server-qualified `ui://` URIs."""

JsonObject = dict[str, Any]


def ui_block(meta: Mapping[str, Any] | None) -> JsonObject | None:
    """A tool's or resource's `_meta.ui`, when it is an object."""
    if not meta:
        return None
    ui = meta.get("ui")
    return dict(ui) if isinstance(ui, Mapping) and ui else None


def resource_uri(ui: Mapping[str, Any] | None) -> str | None:
    """The `ui://` resource a tool's `_meta.ui` names, if it names one."""
    uri = ui.get("resourceUri") if ui else None
    return uri if isinstance(uri, str) and uri.startswith(UI_SCHEME) else None


def app_only(ui: Mapping[str, Any] | None) -> bool:
    """Whether the tool is for the app alone: its visibility is given and leaves out the
    model (`["app"]`, or `[]`)."""
    visibility = ui.get("visibility") if ui else None
    return isinstance(visibility, list) and "model" not in visibility


def qualified(server: str, uri: str) -> str:
    """`uri` of `server` in the router's server-qualified `ui://` form."""
    return f"{UI_SCHEME}{ROUTER_AUTHORITY}/{quote(server, safe='')}/{uri[len(UI_SCHEME) :]}"


@dataclass(frozen=True, slots=True)
class UiUris:
    """Every upstream's `ui://` URIs under the names the router shows them by."""

    _public: Mapping[tuple[str, str], str] = field(default_factory=dict)
    _owner: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, claims: Iterable[tuple[str, str]]) -> UiUris:
        """From (server, URI) pairs: each server's `ui://` URIs, any order."""
        return cls().extended(claims)

    def extended(self, claims: Iterable[tuple[str, str]]) -> UiUris:
        """These, and the claims not yet known, placed after them (in name order among
        themselves): a URI already shown keeps its owner."""
        public, owner = dict(self._public), dict(self._owner)
        for server, uri in sorted(set(claims)):
            if not uri.startswith(UI_SCHEME) or (server, uri) in public:
                continue
            shown = uri if uri not in owner else qualified(server, uri)
            if shown in owner:  # an upstream's own URI in the router's form: keep it apart
                continue
            public[(server, uri)] = shown
            owner[shown] = (server, uri)
        return UiUris(public, owner)

    def public(self, server: str, uri: str) -> str:
        """The URI the router shows for `server`'s `uri` (itself when unknown)."""
        return self._public.get((server, uri), uri)

    def owner(self, shown: str) -> tuple[str, str] | None:
        """The server and its own URI behind a `ui://` URI the router shows; None: none."""
        return self._owner.get(shown)


def with_app_uris(catalog: Catalog, others: Iterable[ToolRecord] = ()) -> tuple[Catalog, UiUris]:
    """The `ui://` URIs the catalog's tools (and `others`: tools the policy denies, which
    keep their claim) name, made distinct; and the catalog with each tool's resource under
    the URI the router shows (the same catalog when no URI is shared)."""
    claims = [
        (r.server, uri)
        for r in (*catalog.records, *others)
        if (uri := resource_uri(r.ui)) is not None
    ]
    uris = UiUris.of(claims)
    changed, records = False, []
    for record in catalog.records:
        uri = resource_uri(record.ui)
        shown = uris.public(record.server, uri) if uri is not None else None
        if shown is not None and shown != uri:
            record, changed = dataclasses.replace(record, app_uri=shown), True
        records.append(record)
    if not changed:
        return catalog, uris
    return Catalog(tuple(records), catalog.collisions, catalog.clashes), uris
