"""What an upstream sends the router unasked, outside any answer: notifications (a list
changed, a watched resource was updated) and log messages."""

from __future__ import annotations

import logging

import anyio.lowlevel
import mcp_types as types
from mcp.client.session import IncomingMessage, LoggingFnT, MessageHandlerFnT

from router.upstream.connection.host_requests import HostRequests
from router.upstream.listing.relisting import Relisting
from router.upstream.listing.resource_watch import ResourceWatches
from router.upstream.stderr import python_level

logger = logging.getLogger("router.upstream.upstream")  # as before the split: log lines


def message_handler(name: str, watches: ResourceWatches, relisting: Relisting) -> MessageHandlerFnT:
    """The SDK client's `message_handler` for one connection."""

    async def handle(message: IncomingMessage) -> None:
        # Runs on the SDK's receive path: only note the request, never await the peer here.
        if isinstance(message, types.ResourceUpdatedNotification):
            watches.updated(str(message.params.uri))
        elif isinstance(message, Exception):
            logger.warning("upstream %s: transport: %s", name, message)
        else:
            relisting.notice(message)  # a `list_changed`, or nothing of ours
        await anyio.lowlevel.checkpoint()

    return handle


def log_callback(name: str, host: HostRequests | None) -> LoggingFnT:
    """The SDK client's `logging_callback`: the router's log, and the host's when relayed."""

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        logger.log(python_level(params.level), "[%s] %s", name, params.data)
        if host is not None:
            await host.log(name, params)

    return log
