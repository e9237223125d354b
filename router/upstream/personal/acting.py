"""On whose behalf the current request reaches the upstreams.

The front's authorization layer (`router.server.access.authorization`) sets it for every
request that passed it, from the principal its access token names; a per-user upstream
(`router.upstream.personal.upstream`) reads it to pick the caller's own connection. Without
identities at the front (stdio, the shared token) nobody is acting, and a per-user upstream
refuses the call rather than lend it anyone's credentials.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Acting:
    """The principal behind a request, and the access token it came with."""

    key: str
    """`Principal.key`: the issuer and subject, stable across sessions and replicas."""
    subject: str
    issuer: str | None
    token: str | None = field(default=None, repr=False)
    """The caller's own access token at the front (what token exchange spends); never
    logged."""


_ACTING: ContextVar[Acting | None] = ContextVar("mcp_router_acting", default=None)


def current_acting() -> Acting | None:
    return _ACTING.get()


@contextmanager
def acting_as(acting: Acting | None) -> Iterator[None]:
    """Within the block, requests go out on behalf of `acting`."""
    token = _ACTING.set(acting)
    try:
        yield
    finally:
        _ACTING.reset(token)


def enter_acting(acting: Acting | None) -> None:
    """Set `acting` for the rest of the current context (a REST request's own task)."""
    _ACTING.set(acting)
