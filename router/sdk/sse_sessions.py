"""A legacy SSE session's id, read once, as the SDK's transport reads it.

The SDK's `SseServerTransport` names a session by `uuid4().hex` in its `endpoint` event and,
on a posted message, reads `request.query_params.get("session_id")` with `UUID(hex=...)`,
which also takes upper case, dashes, braces and a `urn:uuid:` prefix, and takes the last of
a repeated parameter. The front binds each session to the endpoint its stream opened at
(`router.endpoints`), so a message must be looked up by the very id the SDK will use: any
other spelling would find no binding, and the message would be served as the router
itself. So the front accepts only the form the SDK writes (32 lowercase hex digits, given
once) and refuses every other before the SDK sees it.
"""

from __future__ import annotations

from uuid import UUID

from starlette.requests import Request
from starlette.types import Scope

from router.core.errors import HttpRefusal


def canonical_session_id(raw: str) -> str | None:
    """`raw` when it is the id as the SDK writes it (`UUID.hex`); None for anything else,
    even a spelling `UUID(hex=...)` reads as the same session."""
    try:
        parsed = UUID(hex=raw)
    except ValueError:
        return None
    return raw if parsed.hex == raw else None


def posted_session_id(scope: Scope) -> str | HttpRefusal:
    """The session a message to `/messages/` names, read from the query as the SDK reads it;
    a refusal (400) when it is missing, repeated or not in its canonical form."""
    given = Request(scope).query_params.getlist("session_id")
    if len(given) != 1:
        return HttpRefusal(400, "session_id must be given once")
    canonical = canonical_session_id(given[0])
    if canonical is None:
        return HttpRefusal(
            400, "Invalid session ID: give it as the endpoint event wrote it (32 lowercase hex)"
        )
    return canonical
