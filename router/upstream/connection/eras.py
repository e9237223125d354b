"""Mirroring the host's protocol era on the upstream connections, for a front with one host.

An SDK-built upstream whose tool asks mid-call through its session (`create_message`,
`elicit`) can do so only on a handshake-era connection: on 2026-07-28 it has no channel for
server-initiated requests. So when the one host (stdio) speaks a handshake revision, an
upstream set to `protocol: auto` is reached over the handshake too, and its mid-call
requests reach the host on the call's stream as they would directly. A 2026-07-28 host gets
the negotiated (modern) connection. The first connect waits up to `HOST_ERA_WAIT` for the
host's first request; one that comes later restarts the connections that do not match.
A mirrored choice is not remembered (`ProtocolMemory` keeps what the upstream offers).
An upstream that refuses the handshake itself (a 2026-07-28-only server answers `initialize`
with -32020 or -32022, `refuses_handshake`) is not mirrored again: it is reached in the era
it negotiates, at once.

The host's declaration of the extensions the router carries (MCP Apps,
`router.upstream.connection.capabilities.CARRIED_EXTENSIONS`) is mirrored the same way: its
first request says it (a handshake-era host's `initialize`, a 2026-07-28 host's request), and
each upstream connection made after that declares the same at its own `initialize`
(`extensions_for`), so an upstream on a handshake revision, which hears a client's
capabilities only there, renders apps for a host that does and answers one that does not with
text. A connection made before a handshake-era host's `initialize` that declared otherwise is
restarted (`stale`); one made before a 2026-07-28 host's first request keeps what it declared
until it reconnects (a lazy upstream connects at its first call, after it). On 2026-07-28
each request carries the host's own declaration besides (`carry_host_capabilities`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.client.extension import ClientExtension, advertise
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.config import RemoteServer, StdioServer
from router.upstream.connection.capabilities import CARRIED_EXTENSIONS
from router.upstream.connection.negotiation import choose_mode, upstream_key
from router.upstream.state import UpstreamState

logger = logging.getLogger(__name__)

MAX_REFUSED = 1024
"""Upstreams remembered as refusing the handshake (one per configured upstream)."""
HOST_ERA_WAIT = 1.0
"""Seconds a first upstream connect waits to learn the host's era (a host sends its first
request at once; the upstream's own start takes longer)."""


class Connection(Protocol):
    """What `HostEra.stale` reads of an upstream (`router.upstream.upstream.Upstream`)."""

    name: str
    server: StdioServer | RemoteServer

    @property
    def state(self) -> UpstreamState: ...

    @property
    def speaks_modern(self) -> bool: ...


class HostEra:
    """The era of the one host a router serves, once its first request says it."""

    def __init__(self) -> None:
        self._known = anyio.Event()
        self.handshake = False
        self.extensions: dict[str, dict[str, Any]] = {}
        """What the host declared of the extensions the router carries, by identifier."""
        self._declared: dict[str, tuple[str, ...]] = {}
        """What each upstream's latest connection declared at its `initialize`, by
        `upstream_key`."""
        self._listeners: list[Callable[[], None]] = []
        self._refused: set[str] = set()

    def learn(
        self,
        protocol_version: str | None,
        capabilities: types.ClientCapabilities | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        """Note the host's revision and its `capabilities` (the first request seen counts);
        `params` are the request's own: the session records an `initialize`'s capabilities
        only once it is answered."""
        if protocol_version is None or self._known.is_set():
            return
        self.handshake = protocol_version not in MODERN_PROTOCOL_VERSIONS
        if capabilities is None and params is not None:
            try:
                capabilities = types.ClientCapabilities.model_validate(params.get("capabilities"))
            except ValueError:  # no `initialize`: a request without capabilities of its own
                capabilities = None
        declared = (capabilities.extensions if capabilities is not None else None) or {}
        self.extensions = {
            key: dict(declared[key])
            for key in CARRIED_EXTENSIONS
            if isinstance(declared.get(key), dict)
        }
        self._known.set()
        for listener in self._listeners:
            listener()

    def on_learned(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    async def connect_mode(
        self, setting: str, remembered: str | None, key: str = ""
    ) -> tuple[str, bool]:
        """The `Client(mode=...)` to open with, and whether it mirrors the host; never for
        the upstream `key` once it refused the handshake (`refused`)."""
        if setting != "auto" or key in self._refused:
            return choose_mode(setting, remembered), False
        await self.wait()
        if self._known.is_set() and self.handshake:
            return "legacy", True
        return choose_mode(setting, remembered), False

    async def wait(self) -> None:
        """Until the host's first request, for at most `HOST_ERA_WAIT`."""
        if not self._known.is_set():
            with anyio.move_on_after(HOST_ERA_WAIT):
                await self._known.wait()

    async def extensions_for(self, key: str) -> list[ClientExtension]:
        """What upstream `key`'s next connection declares at `initialize`: the host's own
        declaration of the carried extensions (none before its first request, nor for a host
        that declared none)."""
        await self.wait()
        self._declared[key] = tuple(sorted(self.extensions))
        return [advertise(name, settings) for name, settings in sorted(self.extensions.items())]

    def stale(self, upstream: Connection) -> bool:
        """Whether `upstream`'s live connection does not match the host learned since:
        `protocol: auto` on 2026-07-28 for a handshake-era host, or on the handshake having
        declared other extensions than a handshake-era host did at its `initialize`. (A
        2026-07-28 host's first request may be a call, which a restart would fail: its
        declaration goes to the connections made after it.)"""
        if upstream.state not in (UpstreamState.CONNECTING, UpstreamState.HEALTHY):
            return False  # its next connection is made for this host anyway
        if not self.handshake:
            return False
        if upstream.speaks_modern:
            return upstream.server.connect_mode == "auto"
        declared = self._declared.get(upstream_key(upstream.name, upstream.server))
        return declared is not None and declared != tuple(sorted(self.extensions))

    def refused(self, key: str, phase: str, error: BaseException) -> bool:
        """Whether a mirrored connect of upstream `key` that failed in `phase` with `error`
        was the server refusing the handshake; if so it is not mirrored again."""
        if phase != "handshake" or not _refuses_handshake(error):
            return False
        logger.info("upstream %s refuses the handshake: reached in its own era", key)
        if len(self._refused) < MAX_REFUSED:
            self._refused.add(key)
        return True


async def mirrored_mode(
    era: HostEra | None, setting: str, remembered: str | None, key: str
) -> tuple[str, bool, list[ClientExtension]]:
    """`era.connect_mode` and `era.extensions_for(name)`, or the plain choice and no extension
    where no host is mirrored (HTTP: one connection serves every host, and text is what each
    of them can read)."""
    if era is None:
        return choose_mode(setting, remembered), False, []
    mode, mirrored = await era.connect_mode(setting, remembered, key)
    return mode, mirrored, await era.extensions_for(key)


_REFUSALS = (types.HEADER_MISMATCH, types.UNSUPPORTED_PROTOCOL_VERSION)


def _refuses_handshake(error: BaseException) -> bool:
    """A 2026-07-28-only server's answer to `initialize` (wherever the SDK's task groups
    wrapped it)."""
    if isinstance(error, MCPError):
        return error.code in _REFUSALS
    if isinstance(error, BaseExceptionGroup):
        return any(_refuses_handshake(inner) for inner in error.exceptions)
    return False
