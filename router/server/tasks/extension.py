"""Whether a request's client declared the tasks extension, and the error for one that did not.

A 2026-07-28 host declares extensions per request, in `_meta`'s client capabilities; the
router offers tasks to such a host only (a handshake-era host's answers are checked against
its revision's schema, which has no `CreateTaskResult`, so it sees nothing change)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from router.server.lifecycle.requests import Context, is_modern
from router.upstream.connection.capabilities import TASKS_EXTENSION

EXTENSION = TASKS_EXTENSION
SETTINGS: dict[str, Any] = {}
"""What `server/discover` advertises under `capabilities.extensions[EXTENSION]`."""


def declares_tasks(ctx: Context) -> bool:
    """Whether this request's client declared the extension (2026-07-28 requests only)."""
    if not is_modern(ctx):
        return False
    envelope = (ctx.meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(envelope, Mapping):
        return False
    extensions = envelope.get("extensions")
    return isinstance(extensions, Mapping) and EXTENSION in extensions


def missing_extension(method: str) -> MCPError:
    """-32021: `method` needs the extension, and the request did not declare it."""
    return MCPError(
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"mcp-router: {method} needs the tasks extension: declare {EXTENSION} in the "
        "request's client capabilities (`extensions`)",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )
