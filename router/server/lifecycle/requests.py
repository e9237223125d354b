"""What a handler reads of the request it serves: the context's type, the protocol era, the
client's connection, and whether the host asked for progress."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.sdk.internals import connection_of
from router.server.lifecycle.state import RouterState

Context = ServerRequestContext[RouterState, Any]

PROGRESS_KEYS = ("progress_token", "progressToken")
"""Where a request's `_meta` carries its progress token (the SDK's name, and the wire's)."""


def is_modern(ctx: Context) -> bool:
    """Whether the request comes on a 2026-07-28 revision (no handshake, no session)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def connection(ctx: Context) -> Connection:
    """What lives as long as the client's connection (see `router.sdk.internals`)."""
    return connection_of(ctx.session)


def wants_progress(ctx: Context) -> bool:
    """Whether the host's request carries a progress token (`_meta.progressToken`)."""
    meta: Mapping[str, Any] = ctx.meta or {}
    first, second = PROGRESS_KEYS
    return meta.get(first, meta.get(second)) is not None
