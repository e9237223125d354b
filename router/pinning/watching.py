"""Watching the pins of a serving router: an approval written elsewhere (`mcp-router tools
approve`, an operator on another replica) releases the tool here within seconds, and pins
that failed are tried again until they read.

The pins' version is read every `PIN_POLL_SECONDS` (`PRAGMA data_version`, or the shared
store's highest row version), the rows only when it moved. A failure is marked on the
`Pinning` (held tools stay held); while the pins fail, the held tools are decided again every
`PIN_RETRY_SECONDS`, and released once they read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread

from router.pinning import Pinning
from router.pinning.backend import PinVersion

PIN_POLL_SECONDS = 2.0
"""How often a serving router looks for approvals written elsewhere."""
PIN_RETRY_SECONDS = 5.0
"""How often pins that failed are tried again while they fail."""


async def watch_approvals(
    pinning: Pinning,
    moved: Callable[[], Awaitable[object]],
    retry: Callable[[], Awaitable[object]],
) -> None:
    """Run until cancelled: await `moved` when another writer changed the pins, `retry`
    while they are unreadable (each decides the held tools again). Pinning must be on."""
    assert pinning.store is not None
    store = pinning.store
    watch: PinVersion | None = None
    seen: object = None
    retried = anyio.current_time()
    try:
        while True:
            try:
                if watch is None:
                    watch = await anyio.to_thread.run_sync(store.watch)
                version = await anyio.to_thread.run_sync(watch.version)
            except Exception as exc:  # said once; a check that fails holds, never releases
                pinning.failed(exc)
                if watch is not None:
                    watch.close()
                watch = None
            else:
                if seen is not None and version != seen:
                    await moved()
                seen = version
                now = anyio.current_time()
                if pinning.unreadable and now - retried >= PIN_RETRY_SECONDS:
                    retried = now
                    await retry()
            await anyio.sleep(PIN_POLL_SECONDS)
    finally:
        if watch is not None:
            watch.close()
