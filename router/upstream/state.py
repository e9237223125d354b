"""What one upstream is doing now, as a snapshot the server layer and `inspect` can show."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class UpstreamState(enum.StrEnum):
    """The life of one upstream: connecting -> healthy -> unhealthy -> connecting ... stopped;
    a lazy one is idle (not running, its last listing known) until a call needs it."""

    IDLE = "idle"
    """Lazy and not running: its tools come from its last listing (cached, or from an
    earlier connection); the next call starts it."""
    CONNECTING = "connecting"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    """Down (never came up, died or hung); a retry is scheduled."""
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class UpstreamStatus:
    """One upstream's state at the moment it was taken."""

    name: str
    state: UpstreamState
    transport: str
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    tool_count: int = 0
    resource_count: int = 0
    prompt_count: int = 0
    attempts: int = 0
    """Connection attempts so far, the current one included."""
    settled: bool = False
    """Whether the first attempt has ended, in success or failure."""
    connect_seconds: float | None = None
    """Spawn (or dial) to a complete listing, on the last successful connect."""
    last_error: str | None = None
    last_stderr: str | None = None
    """A stdio child's last stderr lines when `last_error` ended its connection (untrusted
    text, for people: `inspect` shows it; never sent to a model)."""
    retry_in: float | None = None
    """Seconds until the next attempt, while unhealthy."""
    sign_in_needed: bool = False
    """The upstream is OAuth-protected and has no usable credentials (`last_error` says how
    to sign in)."""
    lazy: bool = False
    """Started by the first call that needs it, stopped again when idle (`router.start`)."""
    listed_at: float | None = None
    """When the listing the router holds was taken (Unix time), from the cache folder or a
    connection of this process; None before any."""
    from_cache: bool = False
    """The listing held is the cache folder's: the server has not run in this process."""
    principals: int | None = None
    """A per-user upstream's connections open now, one per principal (a count: no names)."""
    extensions: tuple[str, ...] = ()
    """The extensions the server declared with the listing held (`capabilities.extensions`
    identifiers, SEP-2133)."""

    @property
    def healthy(self) -> bool:
        return self.state is UpstreamState.HEALTHY
