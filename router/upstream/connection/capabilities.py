"""The calling host's capabilities on each 2026-07-28 request to an upstream.

A 2026-07-28 request carries the client's capabilities in its `_meta`; an upstream refuses
what needs one the client did not declare (-32021) and puts no input request before a
client that cannot answer it. Forwarding a host's request, the router is that client for
the host: the request must carry what the host declared, and never what it did not. So the
forwarding code sets the host's capabilities for the call (`for_host`), and every request of
a modern connection sends them, narrowed to what the router relays (sampling, elicitation,
roots); a request outside any host's call keeps the router's own.

Extensions (SEP-2133, `capabilities.extensions`) are carried only where the router carries
what they need: MCP Apps (`router.core.apps`), whose tools and `ui://` resources pass through,
so an upstream's UI tool learns per request whether this host renders apps, and answers a host
that does not with text; and the tasks extension (`TASKS_EXTENSION`), only on a request sent
inside `passing_tasks`: the router passes an upstream's own tasks through to the host there
(`router.upstream.connection.tasks`), and nowhere else could it take a task for an answer. At
the handshake the router declares no extension: one connection serves every host, and text is
what each of them can read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp import Client

from router.core.apps import EXTENSION_ID
from router.sdk.internals import Envelope, with_envelope_rewrite

_RELAYED = ("sampling", "elicitation", "roots")
_NEGOTIATION = ("initialize", "server/discover")
CARRIED_EXTENSIONS = (EXTENSION_ID,)
"""The extensions a host's declaration of reaches the upstreams (others are dropped)."""
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension (SEP-2663): carried only inside `passing_tasks`."""
_host_capabilities: ContextVar[dict[str, Any] | None] = ContextVar(
    "mcp_router_host_capabilities", default=None
)
_tasks_declared: ContextVar[dict[str, Any] | None] = ContextVar(
    "mcp_router_tasks_declared", default=None
)


@contextmanager
def for_host(capabilities: types.ClientCapabilities | None) -> Iterator[None]:
    """While inside, upstream requests carry `capabilities` (a host that declared none
    declares none)."""
    declared = (
        capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
        if capabilities is not None
        else {}
    )
    token = _host_capabilities.set(declared)
    try:
        yield
    finally:
        _host_capabilities.reset(token)


@contextmanager
def passing_tasks(settings: dict[str, Any]) -> Iterator[None]:
    """While inside, upstream requests declare the tasks extension with the host's `settings`
    (the host declared it on the request being passed on)."""
    token = _tasks_declared.set(dict(settings))
    try:
        yield
    finally:
        _tasks_declared.reset(token)


def carry_host_capabilities(client: Client) -> None:
    """Make `client`'s 2026-07-28 requests carry the calling host's capabilities."""
    session = client.session

    def rewrite(data: Envelope) -> None:
        host = _host_capabilities.get()
        if host is None or data.get("method") in _NEGOTIATION:
            return
        meta = data.get("params", {}).get("_meta")
        if not isinstance(meta, dict) or types.CLIENT_CAPABILITIES_META_KEY not in meta:
            return  # a handshake-era request: capabilities went once, with `initialize`
        own = meta[types.CLIENT_CAPABILITIES_META_KEY] or {}
        carried = {key: host[key] for key in _RELAYED if key in host and key in own}
        extensions = _carried_extensions(host.get("extensions"))
        tasks = _tasks_declared.get()
        if tasks is not None:
            extensions[TASKS_EXTENSION] = tasks
        if extensions:
            carried["extensions"] = extensions
        meta[types.CLIENT_CAPABILITIES_META_KEY] = carried

    with_envelope_rewrite(session, rewrite)


def _carried_extensions(declared: object) -> dict[str, Any]:
    """What the host declared of the extensions the router carries."""
    if not isinstance(declared, dict):
        return {}
    return {key: declared[key] for key in CARRIED_EXTENSIONS if isinstance(declared.get(key), dict)}
