"""A legacy SSE session's id (`router/sdk/sse_sessions.py`): a message posted to
`/messages/` is served at the endpoint its stream opened at, whatever spelling of the id
it names.

A real front with two endpoints, `a` (the toolbox) and `b` (the large upstream, with a
resource template). A raw SSE stream opened at `/sse/a`; each message is then posted with
the session id spelt another way the SDK's `UUID(hex=...)` also reads (upper case, dashed,
braces, `urn:uuid:`, the parameter given twice). Each is refused, or served as endpoint `a`:
never as the whole router, which would list and read `b`'s upstream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import anyio
import httpx2
import pytest

from router.sdk.sse_sessions import canonical_session_id
from tests.support.http_serving import Front, config, http_front, until_indexed
from tests.support.serving import initialize_request
from tests.upstream.test_upstream_pool import script

LIMIT = 60


def spellings(canonical: str) -> dict[str, str]:
    """The query strings naming session `canonical` in forms `UUID(hex=...)` accepts too."""
    dashed = str(UUID(hex=canonical))
    return {
        "upper": f"session_id={canonical.upper()}",
        "dashed": f"session_id={dashed}",
        "braces": f"session_id=%7B{dashed}%7D",
        "urn": f"session_id=urn:uuid:{dashed}",
        "twice": f"session_id={'0' * 32}&session_id={canonical}",
    }


class Stream:
    """A raw legacy SSE stream: the session id of its `endpoint` event, and its messages."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines
        self.session = ""

    async def endpoint(self) -> str:
        async for line in self._lines:
            if line.startswith("data: /messages/?session_id="):
                self.session = line.removeprefix("data: /messages/?session_id=")
                return self.session
        raise AssertionError("the stream ended before its endpoint event")

    async def answer(self, request_id: int) -> dict[str, Any]:
        async for line in self._lines:
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("id") == request_id:
                    return dict(message)
        raise AssertionError("the stream ended before the answer")


def reaches_b(answer: dict[str, Any]) -> bool:
    """Whether an answer holds what only endpoint b's upstream has (its resource template,
    or a read of one of its resources)."""
    result = answer.get("result", {})
    return "large://" in json.dumps(result) or "contents" in result


@pytest.mark.processes
async def test_a_session_id_spelt_another_way_never_reaches_the_whole_router() -> None:
    cfg = config(
        {"toolbox": script("toolbox"), "large": script("large")},
        endpoints={"a": {"servers": ["toolbox"]}, "b": {"servers": ["large"]}},
    )
    async with http_front(cfg) as front:
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            own, outcomes = await _post_each_spelling(front)

    assert len(own) == 2 and not any(reaches_b(answer) for answer in own)
    assert "error" in own[1]  # large's resource is not endpoint a's to read
    for name, (status, answers) in outcomes.items():
        assert not any(reaches_b(answer) for answer in answers), name
        assert status == 400 and not answers, name  # refused before the SDK reads the id


async def _post_each_spelling(
    front: Front,
) -> tuple[list[dict[str, Any]], dict[str, tuple[int, list[dict[str, Any]]]]]:
    """The answers to a listing and a read posted with the stream's own session id, and for
    each other spelling of it, the status of its posts and the answers the stream gave."""
    listing = {"jsonrpc": "2.0", "method": "resources/templates/list"}
    reading = {"jsonrpc": "2.0", "method": "resources/read", "params": {"uri": "large://text/40"}}
    outcomes: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    async with (
        httpx2.AsyncClient(base_url=front.url, timeout=30) as http,
        http.stream("GET", "/sse/a") as response,
    ):
        stream = Stream(response.aiter_lines())
        session = await stream.endpoint()
        own = f"/messages/?session_id={session}"
        opened = await http.post(own, json=initialize_request("sse-test", "2025-06-18"))
        assert opened.status_code == 202, opened.text
        await stream.answer(1)
        await http.post(own, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n, (name, query) in enumerate(spellings(session).items(), start=10):
            answers, statuses = [], set()
            for request_id, request in ((n, listing), (n + 100, reading)):
                posted = await http.post(f"/messages/?{query}", json={**request, "id": request_id})
                statuses.add(posted.status_code)
                if posted.status_code == 202:
                    answers.append(await stream.answer(request_id))
            [status] = statuses
            outcomes[name] = (status, answers)
        mine = []
        for request_id, request in ((2, listing), (3, reading)):
            await http.post(own, json={**request, "id": request_id})
            mine.append(await stream.answer(request_id))
    return mine, outcomes


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
        ("0123456789ABCDEF0123456789ABCDEF", None),
        ("01234567-89ab-cdef-0123-456789abcdef", None),
        ("{0123456789abcdef0123456789abcdef}", None),
        ("urn:uuid:0123456789abcdef0123456789abcdef", None),
        ("0123", None),
        ("", None),
    ],
)
def test_only_the_form_the_sdk_writes_is_a_session_id(raw: str, canonical: str | None) -> None:
    assert canonical_session_id(raw) == canonical
