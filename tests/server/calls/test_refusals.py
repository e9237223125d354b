"""Refused calls cost their caller (`router/server/calls/refusals.py`,
`router/policy/refusals.py`) and their lines on the trail are bounded
(`router/audit/bounds.py`).

The attack: an authenticated caller sends calls the router refuses before `meter` (a
megabyte-long unknown tool name, again and again). Each was free, and each wrote its whole
name to the audit trail, so a few hundred of them rotated every earlier line away. Now a
line holds at most each field's bound (and says what was cut), and a principal past its
`refused_per_minute` is answered as over quota, writing one line for the whole run, while
another principal's calls go on.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from router.config import parse_config
from router.config.quotas import DEFAULT_REFUSED_PER_MINUTE, Quota
from router.core.errors import ConfigError
from router.policy.refusals import MAX_PRINCIPALS, RefusalRate, refused_limit
from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import SCRIPTS, http_front, streamable_client, until_ready
from tests.support.identity_provider import running_provider
from tests.upstream.test_upstream_pool import config, script

AUDIENCE = "https://router.test/mcp"
RATE = 5
SEND = {"to": "a@x", "subject": "s", "body": "b"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_refusals_spend_a_bucket_and_only_the_first_refusal_past_it_is_reported() -> None:
    clock = Clock()
    rate = RefusalRate(clock)
    for _ in range(3):
        assert rate.over("alice", 3) is None
        rate.refused("alice", 3)
    first, second = rate.over("alice", 3), rate.over("alice", 3)
    assert first is not None and first.first and first.retry_after == pytest.approx(20.0)
    assert second is not None and not second.first  # the same run: not written again
    assert rate.over("bob", 3) is None  # one principal's refusals are not another's
    clock.now += 20.0  # one refusal refilled
    assert rate.over("alice", 3) is None
    rate.refused("alice", 3)
    again = rate.over("alice", 3)
    assert again is not None and again.first  # a new run: one line more


def test_the_table_of_refusals_is_bounded() -> None:
    rate = RefusalRate(Clock())
    rate.refused("first", 1)
    for n in range(MAX_PRINCIPALS):
        rate.refused(f"p{n}", 1)
    assert rate.over("first", 1) is None  # forgotten: a full bucket again
    assert rate.over(f"p{MAX_PRINCIPALS - 1}", 1) is not None


def test_the_limit_has_a_default_and_is_configured_with_the_quotas() -> None:
    assert refused_limit({}, None) == DEFAULT_REFUSED_PER_MINUTE
    assert refused_limit({"default": Quota(calls_per_minute=5)}, None) == 60
    quotas = {"default": Quota(refused_per_minute=10), "bots": Quota(refused_per_minute=None)}
    assert refused_limit(quotas, ("other",)) == 10
    assert refused_limit(quotas, ("bots",)) is None  # null lifts it
    with pytest.raises(ConfigError, match=r"refused_per_minute"):
        parse_config(
            {"mcpServers": {}, "router": {"quotas": {"default": {"refused_per_minute": 0}}}}
        )


def lines(trail: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trail.read_text("utf-8").splitlines()]


@pytest.mark.processes
async def test_a_flood_of_refused_calls_is_bounded_and_another_principal_goes_on(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "trail.jsonl"
    huge = "x" * 1_000_000
    async with running_provider() as provider:
        cfg = config(
            {"shop": script("shop")},
            cache_dir=str(tmp_path / "cache"),
            http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
            quotas={"default": {"refused_per_minute": RATE}},
            audit={"path": str(trail)},
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        alice = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
        bob = {"Authorization": f"Bearer {provider.token('bob', AUDIENCE)}"}
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(60):
                await until_ready(front.state)
                # a handshake revision: 2026-07-28 would put the name in a header too
                async with streamable_client(front.mcp, alice, mode="legacy") as client:
                    with pytest.raises(MCPError, match="unknown tool"):
                        await client.call_tool(huge, {})
                    size_after_one = trail.stat().st_size
                    refused = []
                    for n in range(RATE * 10):
                        try:
                            answer = await client.call_tool(f"{huge}{n}", {})
                        except MCPError:
                            refused.append("unknown")
                        else:
                            assert answer.is_error
                            refused.append(answer.content[0].text)  # type: ignore[union-attr]
                    valid = await client.call_tool("shop__send_email", SEND)
                size_after_flood = trail.stat().st_size
                async with streamable_client(front.mcp, bob) as client:
                    bobs = await client.call_tool("shop__send_email", SEND)
                    with pytest.raises(MCPError, match="unknown tool"):
                        await client.call_tool("shop__nope", {})

    records = lines(trail)
    first = records[0]
    assert size_after_one < 4096  # the whole megabyte name is not on the trail
    assert len(first["tool"]) == 256 and first["outcome"] == "denied"
    assert first["cut"]["tool"] == {
        "chars": len(huge),
        "sha256": hashlib.sha256(huge.encode()).hexdigest(),
    }
    assert len(first["error"]) <= 1024 and "error" in first["cut"]

    # the rate's refusals went as unknown tools; every call after them is over quota
    assert refused[: RATE - 1] == ["unknown"] * (RATE - 1)
    assert all("refused_per_minute is 5" in text for text in refused[RATE:])
    assert valid.is_error and "refused_per_minute" in valid.content[0].text  # type: ignore[union-attr]
    alices = [r for r in records if r["principal"]["sub"] == "alice"]
    assert [r["outcome"] for r in alices] == ["denied"] * RATE + ["over-quota"]
    assert size_after_flood < (RATE + 2) * 4096  # not 50 MB: a bounded line per refusal, one more

    assert not bobs.is_error  # another principal's calls go on
    assert [(r["principal"]["sub"], r["outcome"]) for r in records[-2:]] == [
        ("bob", "ran"),
        ("bob", "denied"),
    ]


def _asked(log: Path) -> list[str]:
    """What reached the upstream for a request (not its connecting and listing)."""
    asked = ("resources/read", "prompts/get", "completion/complete", "tools/call")
    return [line for line in log.read_text("utf-8").splitlines() if line.startswith(asked)]


@pytest.mark.processes
async def test_unknown_resources_prompts_and_completions_spend_the_callers_refusals(
    tmp_path: Path,
) -> None:
    """Reads, prompt gets and completions of unknown names are refused before `meter` as an
    unknown tool is, and spend the same rate: past it, alice's read of a real resource, her
    prompt get and her tool call are over quota and reach no upstream, one line on the trail
    for the run; bob's read goes on."""
    log, trail = tmp_path / "shop.log", tmp_path / "trail.jsonl"
    shop = {"command": sys.executable, "args": [str(SCRIPTS / "storeroom.py"), str(log)]}
    unknown: list[Callable[[Client, int], Awaitable[object]]] = [
        lambda client, n: client.read_resource(f"shop://nope/{n}"),
        lambda client, n: client.get_prompt(f"shop__nope{n}", {}),
        lambda client, n: client.complete(
            types.PromptReference(name=f"shop__nope{n}"), {"name": "sku", "value": ""}
        ),
    ]
    async with running_provider() as provider:
        cfg = config(
            {"shop": shop},
            cache_dir=str(tmp_path / "cache"),
            http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
            quotas={"default": {"refused_per_minute": RATE}},
            audit={"path": str(trail)},
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        alice = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
        bob = {"Authorization": f"Bearer {provider.token('bob', AUDIENCE)}"}
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(60):
                await until_ready(front.state)
                async with streamable_client(front.mcp, alice, mode="legacy") as client:
                    codes = []
                    for n in range(RATE):
                        with pytest.raises(MCPError) as refused:
                            await unknown[n % len(unknown)](client, n)
                        codes.append(refused.value.error.code)
                    before = _asked(log)
                    over = []
                    for ask in (
                        lambda: client.read_resource("shop://config"),
                        lambda: client.get_prompt("shop__restock", {"sku": "a"}),
                    ):
                        with pytest.raises(MCPError) as past:
                            await ask()
                        over.append(past.value.error)
                    called = await client.call_tool("shop__count_stock", {})
                    after = _asked(log)
                async with streamable_client(front.mcp, bob, mode="legacy") as client:
                    bobs = await client.read_resource("shop://config")

    assert codes == [types.INVALID_PARAMS] * RATE  # unknown: refused, each spending one
    assert [e.code for e in over] == [types.INVALID_REQUEST] * 2
    assert all("refused_per_minute is 5" in e.message for e in over), over
    assert called.is_error and "refused_per_minute" in called.content[0].text  # type: ignore[union-attr]
    assert after == before  # nothing past the rate reached the upstream
    alices = [r for r in lines(trail) if r["principal"]["sub"] == "alice"]
    assert [r["outcome"] for r in alices][RATE:] == ["over-quota"]  # one line for the run
    assert bobs.contents  # another principal's reads go on
    assert _asked(log)[-1].startswith("resources/read")
