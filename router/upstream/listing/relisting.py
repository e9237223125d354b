"""Re-listing an upstream when it says one of its lists changed.

An upstream announces a changed list with `notifications/{tools,resources,prompts}/list_changed`
on the handshake revisions, and on a `subscriptions/listen` stream on 2026-07-28. Either way
the kind is only noted where the news arrives; one re-list task per connection, started by
the owner task beside the connection's other tasks (`Upstream._serve`), takes every kind
noted since its last round, re-lists just those lists within the connect timeout, hands the
listing to the owner to adopt, and awaits the handing of new tools to the index.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import (
    ListenNotSupportedError,
    PromptsListChanged,
    ResourcesListChanged,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from router.upstream.listing.fetch import Listing, drop_last_message, list_prompts, list_resources
from router.upstream.listing.fetch import list_tools as fetch_tools

logger = logging.getLogger(__name__)

Adopt = Callable[[Client, Listing], None]
"""`(client, listing)`: the owner installs a re-listing (in the re-list task)."""


class _RelistRequests:
    """Kinds of list an upstream announced as changed, waiting for the re-list task."""

    def __init__(self) -> None:
        self._kinds: set[str] = set()
        self._event = anyio.Event()

    def add(self, kind: str) -> None:
        self._kinds.add(kind)
        self._event.set()

    async def take(self) -> set[str]:
        await self._event.wait()
        kinds, self._kinds, self._event = self._kinds, set(), anyio.Event()
        return kinds


class Relisting:
    """One connection's re-listing: the kinds announced as changed, and the task re-listing them.

    `current()` is the owner's listing, whose unchanged lists a re-listing keeps; `adopt`
    installs a re-listing; `publish_tools()` hands the tools to the index after a re-listing
    that fetched them. `limit` bounds one re-listing and the wait for a listen stream's ack.
    """

    def __init__(
        self,
        upstream: str,
        *,
        limit: float,
        current: Callable[[], Listing],
        adopt: Adopt,
        publish_tools: Callable[[], Awaitable[None]],
    ) -> None:
        self._upstream = upstream
        self._limit = limit
        self._current = current
        self._adopt = adopt
        self._publish_tools = publish_tools
        self._requests = _RelistRequests()

    def notice(self, message: IncomingMessage) -> None:
        """Note a `list_changed` notification; other messages are not this class's.

        Runs on the SDK's receive path: it only notes the request, never awaits the peer."""
        if isinstance(message, types.ToolListChangedNotification):
            self._requests.add("tools")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._requests.add("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._requests.add("prompts")

    async def run(self, client: Client, ended: anyio.Event) -> None:
        """Re-list what was announced, round after round, until cancelled."""
        upstream = self._upstream
        while True:
            kinds = await self._requests.take()
            try:
                with anyio.fail_after(self._limit):
                    listing = await self._relist(client, kinds)
            except Exception as exc:
                if ended.is_set():
                    return
                logger.warning(
                    "upstream %s: re-listing %s failed: %s", upstream, sorted(kinds), exc
                )
                continue
            self._adopt(client, listing)
            logger.info("upstream %s: re-listed %s", upstream, ", ".join(sorted(kinds)))
            if "tools" in kinds:
                await self._publish_tools()

    async def _relist(self, client: Client, kinds: set[str]) -> Listing:
        name, current = self._upstream, self._current()
        tools = await fetch_tools(name, client) if "tools" in kinds else current.tools
        resources, templates = (
            await list_resources(name, client)
            if "resources" in kinds
            else (current.resources, current.resource_templates)
        )
        prompts = await list_prompts(name, client) if "prompts" in kinds else current.prompts
        listing = Listing(tools, resources, templates, prompts)
        await drop_last_message(client, listing)
        return listing

    async def listen(self, client: Client) -> None:
        """2026-07-28 delivers list changes only on a `subscriptions/listen` stream."""
        requests = self._requests
        caps = client.server_capabilities
        wanted = {
            "tools": bool(caps.tools and caps.tools.list_changed),
            "resources": bool(caps.resources and caps.resources.list_changed),
            "prompts": bool(caps.prompts and caps.prompts.list_changed),
        }
        if not any(wanted.values()):
            return
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self._limit) as ack:
                async with client.listen(
                    tools_list_changed=wanted["tools"],
                    resources_list_changed=wanted["resources"],
                    prompts_list_changed=wanted["prompts"],
                ) as subscription:
                    ack.deadline = math.inf
                    # A change between our listing and the ack would be lost: list once more.
                    for kind, on in wanted.items():
                        if on:
                            requests.add(kind)
                    async for event in subscription:
                        if isinstance(event, ToolsListChanged):
                            requests.add("tools")
                        elif isinstance(event, ResourcesListChanged):
                            requests.add("resources")
                        elif isinstance(event, PromptsListChanged):
                            requests.add("prompts")
        except (MCPError, SubscriptionLost, ListenNotSupportedError) as exc:
            logger.warning("upstream %s: not watching list changes: %s", self._upstream, exc)
            return
        if ack.cancelled_caught:
            logger.warning(
                "upstream %s: subscriptions/listen was never acknowledged", self._upstream
            )
