"""Everything an upstream offers, fetched through every page of each list; after a large
listing, one more round trip so the SDK lets go of its wire message (`drop_last_message`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from router.core.errors import UpstreamProtocolError
from router.upstream.connection.liveness import probe

logger = logging.getLogger(__name__)

MAX_PAGES = 1000
"""A paginator that never ends must not hang the connect; 1000 pages is far past any real server."""

_Item = TypeVar("_Item")
_PageT = TypeVar("_PageT", bound="_Page", covariant=True)


class _Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Listing:
    """One complete listing of an upstream; lists it lacks the capability for stay empty."""

    tools: tuple[types.Tool, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    resource_templates: tuple[types.ResourceTemplate, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()


async def paginate(
    upstream: str,
    method: str,
    fetch: Callable[[str | None], Awaitable[_PageT]],
    items: Callable[[_PageT], Sequence[_Item]],
) -> tuple[_Item, ...]:
    """Follow `nextCursor` until the last page; a repeated cursor is a server bug, so stop."""
    collected: list[_Item] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        collected.extend(items(page))
        cursor = page.next_cursor
        if cursor is None:
            return tuple(collected)
        if cursor in seen:
            logger.warning("upstream %s: %s repeated cursor %r; stopping", upstream, method, cursor)
            return tuple(collected)
        seen.add(cursor)
    raise UpstreamProtocolError(upstream, f"{method} still paginating after {MAX_PAGES} pages")


async def list_tools(upstream: str, client: Client) -> tuple[types.Tool, ...]:
    return await paginate(
        upstream, "tools/list", lambda c: client.list_tools(cursor=c), lambda p: p.tools
    )


async def list_resources(
    upstream: str, client: Client
) -> tuple[tuple[types.Resource, ...], tuple[types.ResourceTemplate, ...]]:
    """Resources and resource templates; a server that declares them but fails loses only them."""
    if client.server_capabilities.resources is None:
        return (), ()
    try:
        resources = await paginate(
            upstream,
            "resources/list",
            lambda c: client.list_resources(cursor=c),
            lambda p: p.resources,
        )
        templates = await paginate(
            upstream,
            "resources/templates/list",
            lambda c: client.list_resource_templates(cursor=c),
            lambda p: p.resource_templates,
        )
    except MCPError as exc:
        logger.warning("upstream %s: listing resources failed: %s", upstream, exc)
        return (), ()
    return resources, templates


async def list_prompts(upstream: str, client: Client) -> tuple[types.Prompt, ...]:
    if client.server_capabilities.prompts is None:
        return ()
    try:
        return await paginate(
            upstream, "prompts/list", lambda c: client.list_prompts(cursor=c), lambda p: p.prompts
        )
    except MCPError as exc:
        logger.warning("upstream %s: listing prompts failed: %s", upstream, exc)
        return ()


async def list_everything(upstream: str, client: Client) -> Listing:
    """Tools (required: a failure fails the connect), then resources and prompts."""
    tools = await list_tools(upstream, client)
    resources, templates = await list_resources(upstream, client)
    prompts = await list_prompts(upstream, client)
    return Listing(tools, resources, templates, prompts)


_LARGE_LISTING = 1000
"""Tools in a listing from which its wire message is worth dropping (`drop_last_message`)."""


async def drop_last_message(client: Client, listing: Listing) -> None:
    """After a large listing, one cheap round trip, so the SDK lets go of the listing's
    message.

    The SDK's transport tasks keep the last message they read (the line, its parsed JSON) in
    the locals of their wait for the next one. After a large listing that is the whole
    listing, as text and as parsed JSON, held until the upstream next says something; the
    memory after indexing 20k tools is tracked by `python -m benchmarks.perf`
    (benchmarks/results/perf.json, `memory`). Any answer, an error included, replaces it.
    """
    if len(listing.tools) < _LARGE_LISTING:
        return
    with anyio.move_on_after(_DROP_PROBE_TIMEOUT):
        try:
            await probe(client)
        except Exception as exc:  # the answer does not matter, only that one arrives
            logger.debug("probe after a large listing: %s", exc)


_DROP_PROBE_TIMEOUT = 5.0
