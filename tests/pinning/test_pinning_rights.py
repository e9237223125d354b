"""Approving a changed tool is a right, and the 2026-07-28 pin question is sealed.

Approving a held tool approves it for everyone the router serves, so only an operator
(`router.operators`) may do it in a session, or a person with the config, through
`mcp-router tools approve`; on stdio the one host is the local user and may. The question a
2026-07-28 host is asked carries a sealed state (`router.approvals.sealing`, purpose `pin`): an
accept
without it, with a made-up or old-style one, with one sealed for another principal, or with
one already answered approves nothing.

The upstream is `tests/upstreams/shifty.py`, first seen honest, then served turned (its
`lookup` asks for `~/.ssh/id_rsa`). Fronts with identities run in the test's event loop with
the test identity provider (`tests/support/identity_provider.py`), the upstream a real child; stdio
routers are real `mcp-router serve` children. What reached the upstream is read from its
`ran` tool, what is held from `mcp-router tools review`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from router.approvals.sealing import Binding, Sealer, digest
from router.config import load_config
from router.pinning import fingerprint
from router.server.calls.pin_approval import PIN_KEY
from router.server.http.auth.security import SecurityPolicy
from tests.pinning.test_pinning import (
    LIMIT,
    LOOKUP,
    configure,
    reached,
    refused,
    routed,
    searched,
    seen_once,
    shifty,
    tools_command,
)
from tests.support.http_serving import Front, http_front, streamable_client
from tests.support.identity_provider import IdentityProvider, running_provider
from tests.support.serving import User, write_config
from tests.upstream.test_upstream_pool import first_text

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
ACCEPT: types.InputResponses = {PIN_KEY: types.ElicitResult(action="accept")}
OPERATORS = "an operator (router.operators)"


def turned_front(tmp_path: Path, provider: IdentityProvider | None, *operators: str) -> Path:
    """The config of a front serving the turned upstream (after `seen_once` pinned it
    honest), with identities when there is a `provider`, `operators` by subject."""
    router: dict[str, Any] = {}
    if provider is not None:
        router["http"] = {"oauth": {"issuer": provider.url, "audience": AUDIENCE}}
        router["operators"] = {"subjects": list(operators)}
    return write_config(tmp_path, {"shifty": shifty(turned=True)}, **router)


@asynccontextmanager
async def front_of(config: Path) -> AsyncIterator[Front]:
    """The HTTP front on `config`, verifying identities as `serve --http` would."""
    cfg = load_config(config)
    async with http_front(
        cfg, SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
    ) as front:
        yield front


def bearer(provider: IdentityProvider, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}


@asynccontextmanager
async def client_of(
    url: str, headers: dict[str, str], mode: str, user: User | None = None
) -> AsyncIterator[Client]:
    options: dict[str, Any] = {"mode": mode}
    if user is not None:
        options["elicitation_callback"] = user.elicitation
    async with streamable_client(url, headers, **options) as client:
        yield client


async def held(config: Path) -> bool:
    _, review, _ = await tools_command(config, "review")
    return "shifty/lookup: changed since it was approved" in review


# -- approving is a right ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_plain_user_cannot_approve_a_changed_tool_and_is_told_who_can(
    tmp_path: Path, mode: str
) -> None:
    await seen_once(configure(tmp_path, shifty()))
    plain, operator = User("accept"), User("accept")
    async with running_provider() as provider:
        config = turned_front(tmp_path, provider, "olivia")
        async with front_of(config) as front:
            with anyio.fail_after(LIMIT):
                async with client_of(front.mcp, bearer(provider, "bob"), mode, plain) as bob:
                    error = await refused(bob, LOOKUP, {"word": "cat"})
                    calls = await reached(bob)
                still_held = await held(config)
                async with client_of(
                    front.mcp, bearer(provider, "olivia"), mode, operator
                ) as olivia:
                    approved = await olivia.call_tool(LOOKUP, {"word": "owl"})
                async with client_of(front.mcp, bearer(provider, "bob"), mode) as bob:
                    after = await bob.call_tool(LOOKUP, {"word": "cat"})

    assert plain.asked == []  # never asked: the question is an operator's
    assert error.code == types.INVALID_PARAMS and error.data is not None
    assert OPERATORS in error.message
    assert f"mcp-router tools approve shifty/lookup --config {config}" in error.message
    assert error.data["pinning"] == "changed"
    assert calls == [] and still_held
    assert len(operator.asked) == 1 and first_text(approved) == "owl: a word"
    assert first_text(after) == "cat: a word"  # approved for everyone
    assert not await held(config)


async def test_a_front_without_identities_approves_nothing_in_a_session(tmp_path: Path) -> None:
    """Its callers are indistinguishable, so none may approve for the others: the CLI may."""
    await seen_once(configure(tmp_path, shifty()))
    config = turned_front(tmp_path, None)
    user = User("accept")
    async with front_of(config) as front:
        with anyio.fail_after(LIMIT):
            async with client_of(front.mcp, {}, "legacy", user) as client:
                error = await refused(client, LOOKUP, {"word": "cat"})
                code, _, _ = await tools_command(config, "approve", "shifty/lookup")
                served = await client.call_tool(LOOKUP, {"word": "owl"})

    assert user.asked == []
    assert error.code == types.INVALID_PARAMS and OPERATORS in error.message
    assert code == 0 and first_text(served) == "owl: a word"


# -- the 2026-07-28 question is sealed -----------------------------------------------------


async def _retry(
    client: Client, state: str | None, answer: types.ElicitResult | None = None
) -> types.CallToolResult | types.InputRequiredResult:
    """`lookup` called with the router's question answered (`answer`, accept by default)
    and `state` as its request state, the SDK's own retry loop out of the way."""
    responses: types.InputResponses = {PIN_KEY: answer or ACCEPT[PIN_KEY]}
    return await client.session.call_tool(
        LOOKUP,
        {"word": "x"},
        input_responses=responses if state is not None else None,
        request_state=state,
        allow_input_required=True,
    )


async def test_an_unasked_forged_or_replayed_accept_approves_nothing(tmp_path: Path) -> None:
    await seen_once(configure(tmp_path, shifty()))
    config = configure(tmp_path, shifty(turned=True))
    user = User("accept")
    async with routed(config, mode="auto", user=user) as client:
        with anyio.fail_after(LIMIT):
            await searched(client)  # indexed: the change is recorded
            _, listing, _ = await tools_command(config, "review", "--json")
            pending = fingerprint(json.loads(listing)[0]["pending"])
            old_style = await _retry(client, f"mcp-router.pin.{pending}")
            binding = Binding("pin", "", None, digest("shifty", "lookup", pending))
            forged = await _retry(client, Sealer(b"k" * 32).seal(binding, 300))
            asked = await _retry(client, None)
            assert isinstance(asked, types.InputRequiredResult)
            with pytest.raises(MCPError) as declined:
                await _retry(client, asked.request_state, types.ElicitResult(action="decline"))
            replayed = await _retry(client, asked.request_state)
            calls = await reached(client)
            still_held = await held(config)
            served = await client.call_tool(LOOKUP, {"word": "owl"})  # asked, and accepted

    for attempt in (old_style, forged, replayed):
        assert isinstance(attempt, types.InputRequiredResult)  # asked again, nothing approved
        assert PIN_KEY in (attempt.input_requests or {})
    assert declined.value.code == types.INVALID_PARAMS
    assert calls == [] and still_held
    assert len(user.asked) == 1 and first_text(served) == "owl: a word"


async def test_a_question_sealed_for_one_operator_approves_nothing_for_another(
    tmp_path: Path,
) -> None:
    await seen_once(configure(tmp_path, shifty()))
    async with running_provider() as provider:
        config = turned_front(tmp_path, provider, "alice", "olivia")
        host = User("accept")  # its hosts can ask; the test answers for them
        async with front_of(config) as front:
            with anyio.fail_after(LIMIT):
                async with client_of(front.mcp, bearer(provider, "alice"), "auto", host) as alice:
                    asked = await _retry(alice, None)
                assert isinstance(asked, types.InputRequiredResult)
                async with client_of(front.mcp, bearer(provider, "olivia"), "auto", host) as olivia:
                    stolen = await _retry(olivia, asked.request_state)
                    calls = await reached(olivia)
                async with client_of(front.mcp, bearer(provider, "bob"), "auto", host) as bob:
                    with pytest.raises(MCPError) as plain:
                        await _retry(bob, asked.request_state)
                still_held = await held(config)
                async with client_of(front.mcp, bearer(provider, "alice"), "auto", host) as alice:
                    own = await _retry(alice, asked.request_state)  # hers, unused: approves

    assert host.asked == []
    assert isinstance(stolen, types.InputRequiredResult)
    assert PIN_KEY in (stolen.input_requests or {})
    assert OPERATORS in plain.value.message
    assert calls == [] and still_held
    assert isinstance(own, types.CallToolResult) and first_text(own) == "x: a word"
    assert not await held(config)
