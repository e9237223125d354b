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
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import mcp_types as types
from mcp import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.upstream.connection.negotiation import choose_mode

logger = logging.getLogger(__name__)

MAX_REFUSED = 1024
"""Upstreams remembered as refusing the handshake (one per configured upstream)."""
HOST_ERA_WAIT = 1.0
"""Seconds a first upstream connect waits to learn the host's era (a host sends its first
request at once; the upstream's own start takes longer)."""


class HostEra:
    """The era of the one host a router serves, once its first request says it."""

    def __init__(self) -> None:
        self._known = anyio.Event()
        self.handshake = False
        self._listeners: list[Callable[[], None]] = []
        self._refused: set[str] = set()

    def learn(self, protocol_version: str | None) -> None:
        """Note the host's revision (the first one seen counts)."""
        if protocol_version is None or self._known.is_set():
            return
        self.handshake = protocol_version not in MODERN_PROTOCOL_VERSIONS
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
        if not self._known.is_set():
            with anyio.move_on_after(HOST_ERA_WAIT):
                await self._known.wait()
        if self._known.is_set() and self.handshake:
            return "legacy", True
        return choose_mode(setting, remembered), False

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
) -> tuple[str, bool]:
    """`era.connect_mode`, or the plain choice where no host's era is mirrored (HTTP)."""
    if era is None:
        return choose_mode(setting, remembered), False
    return await era.connect_mode(setting, remembered, key)


_REFUSALS = (types.HEADER_MISMATCH, types.UNSUPPORTED_PROTOCOL_VERSION)


def _refuses_handshake(error: BaseException) -> bool:
    """A 2026-07-28-only server's answer to `initialize` (wherever the SDK's task groups
    wrapped it)."""
    if isinstance(error, MCPError):
        return error.code in _REFUSALS
    if isinstance(error, BaseExceptionGroup):
        return any(_refuses_handshake(inner) for inner in error.exceptions)
    return False
