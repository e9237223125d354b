"""What an upstream asks of the host: sampling, elicitation and `roots/list`.

An upstream's server-to-client request reaches the router's client session for that
upstream; the router cannot answer it itself (it has no model, no user and no roots), so it
hands the request to a `HostRequests`, the server side's relay to the host session whose call
caused it (`router.server.calls.relay`). The SDK advertises a client capability exactly when its
callback is set, so an upstream pool built without a relay (`route`, `inspect`, `index`)
advertises none of the three: the router claims only what it can relay.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

HostRequest = types.CreateMessageRequest | types.ElicitRequest | types.ListRootsRequest


@dataclass(frozen=True, slots=True)
class InputAnswers:
    """What a 2026-07-28 host retries a call with: its answers to the questions of an
    `InputRequiredResult`, and that result's opaque `requestState`."""

    responses: types.InputResponses | None = None
    state: str | None = None


logger = logging.getLogger(__name__)

_R = TypeVar("_R", bound=types.Result)


class HostRequests(Protocol):
    """Relays an upstream's request to the host and returns the host's answer or error.

    `principal`: the key of the principal whose own connection asks (a per-user upstream's,
    `router.upstream.personal.child.OwnHost`): only that principal's calls may be asked or
    told; None for a connection every principal shares."""

    async def ask(
        self,
        upstream: str,
        request: HostRequest,
        result_type: type[_R],
        limit: float,
        *,
        principal: str | None = None,
    ) -> _R | types.ErrorData:
        """Never raises for a host that refuses, lacks the capability or is gone: the
        upstream gets an `ErrorData` saying which."""
        ...

    async def log(
        self,
        upstream: str,
        params: types.LoggingMessageNotificationParams,
        *,
        principal: str | None = None,
    ) -> None:
        """Pass an upstream's log message to the host whose call it belongs to, if any."""
        ...


class HostCallbacks:
    """The SDK client's three callbacks for one upstream, each relayed to `host`."""

    def __init__(self, upstream: str, host: HostRequests, limit: float) -> None:
        self._upstream = upstream
        self._host = host
        self._limit = limit

    def as_client_options(self) -> dict[str, Any]:
        """Keyword arguments for `mcp.Client`."""
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        request = types.CreateMessageRequest(params=params)
        if params.tools:
            return await self._host.ask(
                self._upstream, request, types.CreateMessageResultWithTools, self._limit
            )
        return await self._host.ask(self._upstream, request, types.CreateMessageResult, self._limit)

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        request = types.ElicitRequest(params=params)
        return await self._host.ask(self._upstream, request, types.ElicitResult, self._limit)

    async def list_roots(
        self, context: ClientRequestContext
    ) -> types.ListRootsResult | types.ErrorData:
        request = types.ListRootsRequest()
        return await self._host.ask(self._upstream, request, types.ListRootsResult, self._limit)


async def tell_roots_changed(upstream: str, client: Client, limit: float) -> None:
    """`notifications/roots/list_changed` to one upstream: only over the handshake revisions
    (2026-07-28 drops roots); one that is not delivered is logged, not raised."""
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return
    try:
        with anyio.fail_after(limit):
            await client.session.send_notification(types.RootsListChangedNotification())
    except (MCPError, TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        logger.info("upstream %s: roots change not delivered", upstream)
