"""Liveness probes for remote upstreams.

An idle streamable-HTTP connection does not notice its server going away: the SDK's GET
stream gives up after two failed reconnects without a word, so the upstream would look
healthy until a call failed. A probe every `interval` seconds finds out. Any answer, a
JSON-RPC error included, means the server is there; a transport failure or no answer
within `deadline` means it is gone, and the owner task reconnects with backoff.
"""

from __future__ import annotations

import logging

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger(__name__)


async def probe(client: Client) -> None:
    """One round trip: `ping` on the handshake revisions, `server/discover` on the modern
    ones (which dropped `ping`)."""
    version = client.protocol_version
    if version in MODERN_PROTOCOL_VERSIONS:
        await client.session.send_discover(version)
    else:
        # ClientSession.send_ping, not Client.send_ping: the latter warns on every call.
        await client.session.send_ping()


async def watch(client: Client, *, interval: float, deadline: float) -> str:
    """Probe every `interval` seconds until one fails; return why (for the status line)."""
    while True:
        await anyio.sleep(interval)  # a timer, not a wait for something that could signal
        try:
            with anyio.fail_after(deadline):
                await probe(client)
        except TimeoutError:
            return f"no answer to a liveness probe within {deadline:g}s"
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                return "connection lost (liveness probe)"
            logger.debug("liveness probe answered with error %d: alive", exc.code)
        except Exception as exc:
            return f"liveness probe failed: {type(exc).__name__}: {exc}"
