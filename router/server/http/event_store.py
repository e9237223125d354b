"""The events of the streamable-HTTP front's SSE streams, kept for a client that reconnects.

With an event store the SDK's transport opens every POST stream with a priming event (an id
and empty data, plus the `retry` the router suggests), as the 2025-11-25 revision recommends,
and a client that lost a stream can resume it with `Last-Event-ID`.

Each session's events are its own. The SDK hands one event store to every session's
transport and replays by the event id alone, whose stream id (the request id) collides across
sessions; so `McpEndpoints` gives each session a view of this store instead
(`for_session`, through `router.sdk.internals.hook_sessions`), bound to the session and to
the principal that opened it:

- event ids are random (`secrets.token_urlsafe`, 128 bits), never a counter, so one client
  cannot name another's events by guessing;
- a replay looks only among the replaying session's own events, and only for the principal
  that owns the session (`Principal.key`, "" without identities); any other id replays
  nothing, and `replayable` lets the endpoint refuse it with a clear error first;
- a session's events go when the session ends (`forget`: DELETE, idle timeout, crash).

The store is bounded in bytes: each event costs its message's JSON plus `EVENT_OVERHEAD`
(so priming events, which carry none, count too, and the byte bound bounds their number).
A session holds at most `SESSION_BYTES`: its own oldest events go first (an event larger than
that is not kept, and takes the session's older events with it). All sessions together hold
at most `TOTAL_BYTES`: past it the oldest events of the session holding the most go first,
so one session, or a few large ones, cannot push out everyone else's. Eviction is always
oldest first within a session, so what a session keeps is the newest part of its history,
without gaps: a resume either replays every event after its id or is refused, never a
stream with a hole in it.

Why these numbers: a result is cut at `router.limits.result_tokens` (25,000 tokens, about
100 KB of JSON), so `SESSION_BYTES` keeps some 40 full results of one session, far more than a
client misses in one reconnect (`RETRY_MS`); `TOTAL_BYTES` is the memory the kept results of
`read_result` get by default (64 MiB), which holds the full share of 16 busy sessions and the
recent events of thousands of quiet ones.
"""

from __future__ import annotations

import secrets
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter

from router.server.access.visibility import current_principal

SESSION_BYTES = 4 * 1024 * 1024
"""The most one session's kept events may cost."""
TOTAL_BYTES = 64 * 1024 * 1024
"""The most every session's kept events together may cost."""
EVENT_OVERHEAD = 512
"""What each event costs beyond its message's JSON: its id, stream id and bookkeeping."""
RETRY_MS = 1_000
"""The reconnection delay the priming event suggests, in milliseconds."""

_Event = tuple[StreamId, bytes | None]
_Replay = tuple[StreamId, list[tuple[EventId, bytes]]]


def owner_key() -> str:
    """The key of the current request's principal ("" without identities)."""
    principal = current_principal()
    return principal.key if principal is not None else ""


@dataclass(eq=False)
class _Session:
    owner: str
    events: OrderedDict[EventId, _Event] = field(default_factory=OrderedDict)
    cost: int = 0

    def pop_oldest(self) -> int:
        _, (_, data) = self.events.popitem(last=False)
        freed = EVENT_OVERHEAD + (len(data) if data is not None else 0)
        self.cost -= freed
        return freed


class BoundedEventStore:
    """Every session's recent events, bounded in bytes per session and in all; reached
    through a session's view (`for_session`), never directly by the SDK."""

    def __init__(self, session_bytes: int = SESSION_BYTES, total_bytes: int = TOTAL_BYTES) -> None:
        self.session_bytes = session_bytes
        self.total_bytes = total_bytes
        self._sessions: dict[str, _Session] = {}
        self._owners: Counter[str] = Counter()
        self._cost = 0

    @property
    def cost(self) -> int:
        """What the kept events cost now, in bytes."""
        return self._cost

    def for_session(self, session_id: str, owner: str) -> SessionEvents:
        """The event store of one new session, owned by the principal key `owner`."""
        session = _Session(owner)
        self.forget(session_id)  # a session id is new each time; never count one twice
        self._sessions[session_id] = session
        self._owners[owner] += 1
        return SessionEvents(self, session_id, session)

    def forget(self, session_id: str) -> None:
        """The session ended: its events go (called again, it does nothing)."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._cost -= session.cost
            self._owners[session.owner] -= 1
            if not self._owners[session.owner]:
                del self._owners[session.owner]
            session.events.clear()
            session.cost = 0

    def sessions_of(self, owner: str) -> int:
        """How many open sessions the principal key `owner` holds."""
        return self._owners[owner]

    def replayable(self, session_id: str, event_id: str, owner: str) -> bool | None:
        """Whether `event_id` names a kept event of the session, asked by `owner`; None
        when the session is unknown here or is another principal's (whoever answers for
        the session then says it does not exist)."""
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            return None
        return event_id in session.events

    def keep(self, session_id: str, session: _Session, stream: StreamId, data: bytes | None) -> str:
        """A new event of `session`'s `stream` (`data`: its message's JSON, None for a
        priming event); its id. A session that has ended keeps nothing."""
        event_id = secrets.token_urlsafe(16)
        if self._sessions.get(session_id) is not session:
            return event_id  # the session has ended: nothing will replay it
        cost = EVENT_OVERHEAD + (len(data) if data is not None else 0)
        session.events[event_id] = (stream, data)
        session.cost += cost
        self._cost += cost
        while session.cost > self.session_bytes:
            self._cost -= session.pop_oldest()
        while self._cost > self.total_bytes:
            largest = max(self._sessions.values(), key=lambda s: s.cost)
            self._cost -= largest.pop_oldest()
        return event_id

    def after(self, session: _Session, last_event_id: str) -> _Replay | None:
        """The stream of `session`'s event `last_event_id` and its later events with data;
        None when the session keeps no such event."""
        found = session.events.get(last_event_id)
        if found is None:
            return None
        stream = found[0]
        after = False
        replay: list[tuple[EventId, bytes]] = []
        for event_id, (event_stream, data) in session.events.items():
            if after and event_stream == stream and data is not None:
                replay.append((event_id, data))
            after = after or event_id == last_event_id
        return stream, replay


class SessionEvents(EventStore):
    """One session's events: what the SDK's transport of that session stores and replays."""

    def __init__(self, store: BoundedEventStore, session_id: str, session: _Session) -> None:
        self._store = store
        self._session_id = session_id
        self._session = session

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        data = None
        if message is not None:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        return self._store.keep(self._session_id, self._session, stream_id, data)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """The session's events after `last_event_id` on its stream; None (nothing sent)
        for an id that is not this session's, or a request of another principal."""
        if owner_key() != self._session.owner:
            return None
        found = self._store.after(self._session, last_event_id)
        if found is None:
            return None
        stream, replay = found
        for event_id, data in replay:
            message = jsonrpc_message_adapter.validate_json(data)
            await send_callback(EventMessage(message, event_id))
        return stream
