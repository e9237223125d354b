"""The events of the streamable-HTTP front's SSE streams, kept for a client that reconnects.

With an event store the SDK's transport opens every POST stream with a priming event (an id
and empty data, plus the `retry` the router suggests), as the 2025-11-25 revision recommends,
and a client that lost a stream can resume it with `Last-Event-ID`. The store is bounded: the
oldest events go first, so a client that reconnects too late finds nothing to replay and gets
a fresh stream, never another stream's events.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

import anyio
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

MAX_EVENTS = 2_000
"""Events kept across every stream of this front (a result can be large: it is the count that
bounds the memory, about the size of this many replies)."""
RETRY_MS = 1_000
"""The reconnection delay the priming event suggests, in milliseconds."""


class BoundedEventStore(EventStore):
    """The last `limit` events of every stream, in order."""

    def __init__(self, limit: int = MAX_EVENTS) -> None:
        self._limit = limit
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = anyio.Lock()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        async with self._lock:
            event_id = f"{next(self._ids)}"
            self._events[event_id] = (stream_id, message)
            while len(self._events) > self._limit:
                self._events.popitem(last=False)
            return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        async with self._lock:
            found = self._events.get(last_event_id)
            if found is None:
                return None
            stream_id = found[0]
            after = False
            replay: list[tuple[EventId, JSONRPCMessage]] = []
            for event_id, (stream, message) in self._events.items():
                if after and stream == stream_id and message is not None:
                    replay.append((event_id, message))
                after = after or event_id == last_event_id
        for event_id, message in replay:
            await send_callback(EventMessage(message, event_id))
        return stream_id
