"""What only requests need loads after `initialize` is answered: the handlers' own modules
(the call pipeline, the listings, the upstreams' resources and prompts) and the retriever.

`answered`, the outermost middleware, sets `RouterState.answered` at the first answer;
`warm_up` then imports them in a worker thread. A request that comes before they are
imported imports its handler's module itself, also off the event loop (`on_request`).
`benchmarks/results/startup.json` measures what `initialize` waits for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.context import CallNext, ServerRequestContext

if TYPE_CHECKING:
    from router.server.lifecycle.state import RouterState

LISTING = "router.server.listing.tools_list"
AGGREGATE = "router.server.listing.aggregate"
DISPATCH = "router.server.calls.dispatch"
ON_REQUEST = (LISTING, AGGREGATE, DISPATCH, "router.server.calls.passage")
"""The handlers' modules, imported once the first request is answered."""


def import_request_modules() -> None:
    """Import what requests use (blocking: run it in a worker thread). jsonschema waits for
    the first call that is validated (`router.server.calls.validation`)."""
    for module in ON_REQUEST:
        importlib.import_module(module)
    import router.retrieval.retriever  # noqa: F401


def on_request(module: str, name: str) -> Any:
    """The handler `name` of `module`, imported (in a worker thread) by its first request if
    `warm_up` has not imported it yet."""
    found: list[Callable[..., Any]] = []

    async def handler(*args: Any) -> Any:
        if not found:
            loaded = await anyio.to_thread.run_sync(importlib.import_module, module)
            found.append(getattr(loaded, name))
        return await found[0](*args)

    handler.__name__ = handler.__qualname__ = name  # as `errors_as_mcp` logs it
    return handler


async def warm_up(state: RouterState) -> None:
    """Once the first request is answered, import what the others need."""
    await state.answered.wait()
    await anyio.to_thread.run_sync(import_request_modules)


async def answered(ctx: ServerRequestContext[RouterState, Any], call_next: CallNext) -> Any:
    """Middleware: the first answer sets `RouterState.answered` (`warm_up`)."""
    try:
        return await call_next(ctx)
    finally:
        ctx.lifespan_context.answered.set()
