"""A base for wrappers around an SDK read stream that change only how `receive` behaves.

The SDK's dispatcher reads a stream through `receive`, async iteration, `async with` and
the duck-typed `last_context`; a wrapper must offer all of them or messages go missing.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import anyio
from mcp.shared.message import SessionMessage

from router.sdk.internals import ReadStream, last_context_of

Item = SessionMessage | Exception


class ReadStreamWrapper:
    """Delegates everything to `inner`; subclasses override `receive`."""

    def __init__(self, inner: ReadStream[Item]) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        # The dispatcher reads this duck-typed attribute for per-message contextvars.
        return last_context_of(self._inner)

    async def receive(self) -> Item:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None
