"""A broadcast "something changed" that any number of tasks can wait on.

An `anyio.Event` fires once; a waiter that must see every later change needs a fresh one
armed at each notice. This is that pattern, once, for the upstreams, the live index and the
router state.
"""

from __future__ import annotations

import anyio


class Changes:
    """Wake every current waiter on `notify()`; later waiters wait for the next notice."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        await self._event.wait()
