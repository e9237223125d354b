"""Each streamable-HTTP session's SSE events are its own, and each principal gets a fair
share of the streams, tried as another client would: another session's `Last-Event-ID`
(seen, or guessed), a resume after other sessions flooded the store, the honest resume that
must still work, and one principal opening streams until it is refused while another is
still served. A real front over real HTTP, its identities from a real identity provider on
loopback (tests/support/identity_provider.py), its upstream a real MCP server over stdio
(tests/upstreams/toolbox.py, whose `translate_text` echoes its text)."""

from __future__ import annotations

import functools
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from router.server.http import mcp_endpoints
from router.server.http.auth.security import SecurityPolicy
from router.server.http.event_store import BoundedEventStore
from router.server.sessions import listen
from tests.support.http_serving import (
    MCP_ACCEPT,
    SCRIPTS,
    Front,
    config,
    http_front,
    sse_events,
    streamable_client,
    until_indexed,
)
from tests.support.http_serving import open_session as raw_session
from tests.support.identity_provider import (
    IdentityProvider,
    module_provider,  # noqa: F401 (the provider fixture)
)
from tests.support.serving import initialize_request

pytestmark = pytest.mark.processes

SECRET = "launch code 0451-" + secrets.token_hex(4)
Headers = dict[str, str]


AUDIENCE = "https://router.test/mcp"


def toolbox() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SCRIPTS / "toolbox.py")]}


def front_config() -> Any:
    return config({"toolbox": toolbox()}, pin=["toolbox/translate_text"])


INITIALIZE = initialize_request("private-streams-test")


async def open_session(
    http: httpx2.AsyncClient, front: Front, headers: Headers | None = None
) -> Headers:
    """A 2025-11-25 session (handshake done); the headers that address it."""
    return await raw_session(
        http,
        front.mcp,
        headers,
        protocol="2025-11-25",
        client="private-streams-test",
        version_header=True,
    )


async def echo(
    http: httpx2.AsyncClient, front: Front, session: Headers, request_id: int, text: str
) -> list[str]:
    """Call `translate_text` on the session's POST stream; its events' ids, priming first."""
    call = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "toolbox__translate_text",
            "arguments": {"text": text, "language": "fr"},
        },
    }
    answered = await http.post(front.mcp, json=call, headers=session)
    assert answered.status_code == 200 and text in answered.text, answered.text
    ids = [event["id"] for event in sse_events(answered.text) if event.get("id")]
    assert len(ids) == 2, answered.text  # the priming event and the result
    return ids


async def resume(
    http: httpx2.AsyncClient, front: Front, session: Headers, last_event_id: str
) -> tuple[int, str]:
    """`GET /mcp` with `Last-Event-ID`: the status and the first replayed event's data (a
    refusal's body instead). A replay that sends nothing is waited on briefly: only a store
    that accepted the id keeps such a stream open."""
    headers = {**session, "last-event-id": last_event_id}
    async with http.stream("GET", front.mcp, headers=headers) as stream:
        if stream.status_code != 200:
            return stream.status_code, (await stream.aread()).decode()
        with anyio.move_on_after(2):
            async for line in stream.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    return 200, line[5:].strip()
    return 200, ""


async def test_another_session_replays_none_of_a_sessions_events_by_their_ids() -> None:
    """The attack of issue 33: B resumes with the ids A's stream carried (priming and
    result) and with small numbers, as a global counter would hand out; none gives B
    anything of A's, and each is refused as naming no event of B's session."""
    async with http_front(front_config()) as front, httpx2.AsyncClient(timeout=15) as http:
        with anyio.fail_after(60):
            await until_indexed(front.state)
            alice = await open_session(http, front)
            bob = await open_session(http, front)
            seen = await echo(http, front, alice, 2, SECRET)
            await echo(http, front, bob, 2, "bob's own words")
            guesses = [str(n) for n in range(1, 12)] + [secrets.token_urlsafe(16)]
            tried = [*seen, *guesses]
            answers = {event_id: await resume(http, front, bob, event_id) for event_id in tried}
    for event_id, (status, body) in answers.items():
        assert SECRET not in body, event_id
        assert status == 400, (event_id, status, body)
        error = types.JSONRPCError.model_validate_json(body).error
        assert error.code == types.INVALID_REQUEST
        assert "Last-Event-ID" in error.message


async def test_a_session_resumes_its_own_stream_and_no_other_session_can() -> None:
    """The honest resume still works: A, reconnecting after its priming event, gets its
    result again; A's session cannot resume B's stream either."""
    async with http_front(front_config()) as front, httpx2.AsyncClient(timeout=15) as http:
        with anyio.fail_after(60):
            await until_indexed(front.state)
            alice = await open_session(http, front)
            bob = await open_session(http, front)
            alice_ids = await echo(http, front, alice, 2, SECRET)
            bob_ids = await echo(http, front, bob, 2, "bob's own words")
            resumed = await resume(http, front, alice, alice_ids[0])
            crossed = await resume(http, front, alice, bob_ids[0])
    assert resumed[0] == 200 and SECRET in resumed[1]
    assert crossed[0] == 400 and "bob's own words" not in crossed[1]


async def test_sessions_that_flood_the_store_push_out_only_their_own_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three sessions send large results until their events pass both the session's and
    the front's byte bound (made small here); a quiet session that answered once still
    resumes its stream, and a flooding session's oldest events are gone (400)."""
    small = functools.partial(BoundedEventStore, session_bytes=16_000, total_bytes=40_000)
    monkeypatch.setattr(mcp_endpoints, "BoundedEventStore", small)
    async with http_front(front_config()) as front, httpx2.AsyncClient(timeout=15) as http:
        with anyio.fail_after(60):
            await until_indexed(front.state)
            quiet = await open_session(http, front)
            quiet_ids = await echo(http, front, quiet, 2, SECRET)
            floods = [await open_session(http, front) for _ in range(3)]
            first_ids = []
            for round_ in range(4):
                for flood in floods:
                    ids = await echo(http, front, flood, 2 + round_, "w" * 4_000 + str(round_))
                    first_ids.append(ids[0])
            quiet_resumed = await resume(http, front, quiet, quiet_ids[0])
            flood_resumed = await resume(http, front, floods[0], first_ids[0])
    assert quiet_resumed[0] == 200 and SECRET in quiet_resumed[1]
    assert flood_resumed[0] == 400 and "Last-Event-ID" in flood_resumed[1]


@pytest.fixture(scope="module")
async def identity_front(provider: IdentityProvider) -> AsyncIterator[Front]:
    oauth = {"issuer": provider.url, "audience": AUDIENCE, "scopes": ["mcp"]}
    cfg = config({"toolbox": toolbox()}, pin=["toolbox/translate_text"], http={"oauth": oauth})
    policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
    async with http_front(cfg, policy) as running:
        with anyio.fail_after(30):
            await until_indexed(running.state)
        yield running


def bearer(provider: IdentityProvider, subject: str) -> Headers:
    return {"Authorization": f"Bearer {provider.token(subject, AUDIENCE)}"}


async def test_with_identities_another_principal_reaches_neither_the_events_nor_the_session(
    identity_front: Front, provider: IdentityProvider
) -> None:
    front = identity_front
    async with httpx2.AsyncClient(timeout=15) as http:
        with anyio.fail_after(60):
            alice = await open_session(http, front, bearer(provider, "alice"))
            bob = await open_session(http, front, bearer(provider, "bob"))
            alice_ids = await echo(http, front, alice, 2, SECRET)
            own_session = [await resume(http, front, bob, i) for i in alice_ids]
            alices_session = {**alice, **bearer(provider, "bob")}
            hijacked = [await resume(http, front, alices_session, i) for i in alice_ids]
            honest = await resume(http, front, alice, alice_ids[0])
    assert [status for status, _ in own_session] == [400, 400]
    assert [status for status, _ in hijacked] == [404, 404]  # as if it did not exist
    assert all(SECRET not in body for _, body in own_session + hijacked)
    assert honest[0] == 200 and SECRET in honest[1]


async def test_a_principal_at_its_share_of_legacy_sse_streams_is_refused_and_others_served(
    identity_front: Front, provider: IdentityProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_endpoints, "SSE_PER_PRINCIPAL", 2)
    alice, bob = bearer(provider, "alice"), bearer(provider, "bob")
    async with AsyncExitStack() as held, httpx2.AsyncClient(timeout=15) as http:
        with anyio.fail_after(30):
            for _ in range(2):
                opened = await held.enter_async_context(
                    http.stream("GET", identity_front.sse, headers=alice)
                )
                assert opened.status_code == 200
            refused = await http.get(identity_front.sse, headers=alice)
            served = await held.enter_async_context(
                http.stream("GET", identity_front.sse, headers=bob)
            )
            assert served.status_code == 200
    assert refused.status_code == 429 and refused.headers["retry-after"]
    error = types.JSONRPCError.model_validate_json(refused.text).error
    assert error.code == types.INVALID_REQUEST and "2 SSE streams" in error.message


async def test_a_principal_at_its_share_of_listen_streams_is_refused_and_others_served(
    identity_front: Front, provider: IdentityProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listen, "STREAMS_PER_PRINCIPAL", 2)
    alice, bob = bearer(provider, "alice"), bearer(provider, "bob")
    with anyio.fail_after(30):
        async with (
            streamable_client(identity_front.mcp, alice, mode="2026-07-28") as alices,
            streamable_client(identity_front.mcp, bob, mode="2026-07-28") as bobs,
            alices.listen(tools_list_changed=True),
            alices.listen(prompts_list_changed=True),
        ):
            with pytest.raises(MCPError) as refused:
                async with alices.listen(tools_list_changed=True):
                    pass
            async with bobs.listen(tools_list_changed=True) as served:
                assert served.honored.tools_list_changed
        async with (  # a closed stream gives its slot back
            streamable_client(identity_front.mcp, alice, mode="2026-07-28") as alices,
            alices.listen(tools_list_changed=True) as again,
        ):
            assert again.honored.tools_list_changed
    assert refused.value.error.code == types.INVALID_REQUEST
    assert "2 listen streams" in refused.value.error.message


async def test_a_principal_at_its_share_of_sessions_is_refused_until_it_ends_one(
    identity_front: Front, provider: IdentityProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_endpoints, "SESSIONS_PER_PRINCIPAL", 2)
    # principals of their own: the other tests' sessions of alice and bob may still be open
    alice, bob = bearer(provider, "carol"), bearer(provider, "dave")
    async with httpx2.AsyncClient(timeout=15) as http:
        with anyio.fail_after(30):
            sessions = [await open_session(http, identity_front, alice) for _ in range(2)]
            refused = await http.post(
                identity_front.mcp, json=INITIALIZE, headers={**MCP_ACCEPT, **alice}
            )
            served = await open_session(http, identity_front, bob)
            async with streamable_client(identity_front.mcp, alice, mode="2026-07-28") as c:
                stateless = await c.list_tools()  # opens no session: not counted, not refused
            ended = await http.delete(identity_front.mcp, headers=sessions[0])
            again = await open_session(http, identity_front, alice)
            for session in (sessions[1], served, again):
                await http.delete(identity_front.mcp, headers=session)
    assert refused.status_code == 429, refused.text
    assert "2 MCP sessions" in types.JSONRPCError.model_validate_json(refused.text).error.message
    assert ended.status_code == 200 and again["mcp-session-id"]
    assert "toolbox__translate_text" in [tool.name for tool in stateless.tools]


async def test_without_identities_listen_streams_meet_only_the_global_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every caller of a front without identities is one principal: its share would be the
    whole table, so only `MAX_STREAMS` applies."""
    monkeypatch.setattr(listen, "STREAMS_PER_PRINCIPAL", 1)
    async with http_front(front_config()) as front:
        with anyio.fail_after(30):
            await until_indexed(front.state)
            async with (
                streamable_client(front.mcp, mode="2026-07-28") as client,
                client.listen(tools_list_changed=True),
                client.listen(tools_list_changed=True) as second,
            ):
                assert second.honored.tools_list_changed
