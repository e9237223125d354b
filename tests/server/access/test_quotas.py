"""Quotas per principal (`router.quotas`): the token buckets and counters
(`router.policy.quotas`), the config's checks, and a real router that refuses the calls over
a quota before they reach the upstream, says when to retry, and writes them to the trail."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from router.config import parse_config
from router.config.quotas import Quota, UpstreamQuota
from router.core.errors import ConfigError
from router.policy.quotas import MAX_PRINCIPALS, Limits, OverQuota, QuotaBook, limits_for
from router.server.http.auth.security import SecurityPolicy
from tests.conftest import ROOT
from tests.support.http_serving import http_front, streamable_client, until_ready
from tests.support.identity_provider import running_provider
from tests.support.serving import raw_router, write_config
from tests.upstream.test_upstream_pool import config, script


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_a_burst_then_one_call_per_refill() -> None:
    clock = Clock()
    book = QuotaBook(clock)
    limits = Limits(calls_per_minute=3)
    assert all(callable(book.admit("alice", "shop", limits)) for _ in range(3))
    over = book.admit("alice", "shop", limits)
    assert isinstance(over, OverQuota) and over.quota == "calls_per_minute" and over.limit == 3
    assert over.retry_after == pytest.approx(20.0)  # one token every 20 s
    assert "retry in 20 s" in over.message() and "router.quotas" in over.message()
    clock.now += 19.0
    assert isinstance(book.admit("alice", "shop", limits), OverQuota)
    clock.now += 1.5
    assert callable(book.admit("alice", "shop", limits))
    assert callable(book.admit("bob", "shop", limits))  # one principal's use is not another's


def test_calls_in_flight_are_counted_until_released_once() -> None:
    book = QuotaBook(Clock())
    limits = Limits(concurrent_calls=2, upstream_concurrent_calls=1)
    first = book.admit("alice", "shop", limits)
    assert callable(first)
    over = book.admit("alice", "shop", limits)
    assert isinstance(over, OverQuota) and over.quota == "shop.concurrent_calls"
    other = book.admit("alice", "time", limits)  # another upstream: its own count
    assert callable(other)
    assert isinstance(book.admit("alice", "git", limits), OverQuota)  # two in flight in all
    first()
    first()  # a second release changes nothing
    again = book.admit("alice", "shop", limits)
    assert callable(again)
    assert isinstance(book.admit("alice", "shop", limits), OverQuota)


def test_a_refused_call_spends_nothing() -> None:
    book = QuotaBook(Clock())
    limits = Limits(calls_per_minute=5, upstream_calls_per_minute=1)
    assert callable(book.admit("alice", "shop", limits))
    for _ in range(10):
        assert isinstance(book.admit("alice", "shop", limits), OverQuota)
    elsewhere = Limits(calls_per_minute=5)  # time's tools: the router-wide limit only
    assert sum(callable(book.admit("alice", "time", elsewhere)) for _ in range(10)) == 4


def test_the_table_forgets_the_principal_least_recently_seen() -> None:
    book = QuotaBook(Clock())
    limits = Limits(calls_per_minute=1)
    book.admit("first", "s", limits)
    for n in range(MAX_PRINCIPALS):
        book.admit(f"p{n}", "s", limits)
    assert callable(book.admit("first", "s", limits))  # forgotten: a full bucket again
    assert isinstance(book.admit(f"p{MAX_PRINCIPALS - 1}", "s", limits), OverQuota)


def test_a_caller_gets_the_most_generous_of_its_profiles_else_the_default() -> None:
    quotas = {
        "default": Quota(calls_per_minute=10),
        "team": Quota(calls_per_minute=60, upstreams={"shop": UpstreamQuota(concurrent_calls=2)}),
        "bots": Quota(calls_per_minute=600, concurrent_calls=4),
        "free": Quota(),
    }
    assert limits_for(quotas, ("team",), "shop") == Limits(60, None, None, 2)
    assert limits_for(quotas, ("bots", "team"), "shop") == Limits(600, None, None, None)
    assert limits_for(quotas, ("free", "team"), "time").unlimited  # unset beats a number
    assert limits_for(quotas, ("other",), "shop") == Limits(calls_per_minute=10)
    assert limits_for(quotas, None, "shop") == Limits(calls_per_minute=10)
    assert limits_for({}, ("team",), "shop").unlimited


def test_a_quota_for_a_profile_that_does_not_exist_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"router\.quotas\.finance: 'finance' is not a profile"):
        parse_config({"mcpServers": {}, "router": {"quotas": {"finance": {"calls_per_minute": 1}}}})
    with pytest.raises(Exception, match="calls_per_minute"):
        parse_config({"mcpServers": {}, "router": {"quotas": {"default": {"calls_per_minute": 0}}}})


@pytest.mark.processes
async def test_calls_over_the_quota_never_reach_the_upstream(tmp_path: Path) -> None:
    trail = tmp_path / "trail.jsonl"
    config = write_config(
        tmp_path,
        {"shop": script("shop")},
        quotas={
            "default": {"calls_per_minute": 60, "upstreams": {"shop": {"calls_per_minute": 3}}}
        },
        audit={"path": str(trail)},
    )
    results = []
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("send an email")
            for n in range(5):
                results.append(
                    await router.call(
                        "shop__send_email", {"to": "a@x", "subject": str(n), "body": "b"}
                    )
                )
    assert [bool(r.get("isError")) for r in results] == [False, False, False, True, True]
    over = results[3]
    assert "over quota: shop.calls_per_minute is 3" in over["content"][0]["text"]
    quota = over["_meta"]["mcp-router/quota"]
    assert quota["quota"] == "shop.calls_per_minute" and 1 <= quota["retryAfter"] <= 20
    outcomes = [json.loads(line)["outcome"] for line in trail.read_text("utf-8").splitlines()]
    assert outcomes == ["ran", "ran", "ran", "over-quota", "over-quota"]


def test_the_documented_quotas_section_is_a_valid_config() -> None:
    text = (ROOT / "docs" / "identities.md").read_text("utf-8")
    section = text[text.index("## Quotas (`router.quotas`)") :]
    example = section[section.index("```json") + len("```json") : section.index("```\n\n")]
    config = parse_config(json.loads("{" + example.strip() + ', "mcpServers": {}}'))
    quotas = config.router.quotas
    assert limits_for(quotas, ("bots",), "github") == Limits(600, 16, None, None)
    assert limits_for(quotas, ("other",), "github") == Limits(60, 4, 20, None)


@pytest.mark.processes
async def test_one_principal_over_quota_does_not_stop_another_and_the_trail_names_each(
    tmp_path: Path,
) -> None:
    audience = "https://router.test/mcp"
    trail = tmp_path / "trail.jsonl"
    async with running_provider() as provider:
        cfg = config(
            {"shop": script("shop")},
            cache_dir=str(tmp_path / "cache"),
            http={"oauth": {"issuer": provider.url, "audience": audience}},
            quotas={"default": {"calls_per_minute": 2}},
            audit={"path": str(trail)},
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        answers: dict[str, list[bool]] = {}
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(60):
                await until_ready(front.state)
                for who, calls in (("alice", 4), ("bob", 2), ("alice", 1)):
                    token = provider.token(who, audience)
                    headers = {"Authorization": f"Bearer {token}"}
                    async with streamable_client(front.mcp, headers) as client:
                        for n in range(calls):
                            result = await client.call_tool(
                                "shop__send_email", {"to": who, "subject": str(n), "body": "b"}
                            )
                            answers.setdefault(who, []).append(bool(result.is_error))
    assert answers == {"alice": [False, False, True, True, True], "bob": [False, False]}
    records = [json.loads(line) for line in trail.read_text("utf-8").splitlines()]
    by = [(r["principal"]["sub"], r["outcome"]) for r in records]
    assert by == [
        ("alice", "ran"),
        ("alice", "ran"),
        ("alice", "over-quota"),
        ("alice", "over-quota"),
        ("bob", "ran"),
        ("bob", "ran"),
        ("alice", "over-quota"),
    ]
    assert all(r["principal"]["iss"] == provider.url for r in records)


@pytest.mark.processes
async def test_code_runs_over_their_quota_are_refused_before_the_program_runs(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "trail.jsonl"
    config = write_config(
        tmp_path,
        {"shop": script("shop")},
        mode="code",
        quotas={"default": {"code_runs_per_minute": 1}},
        audit={"path": str(trail)},
    )
    program = "await call_tool('shop__send_email', {'to': 'a@x', 'subject': 's', 'body': 'b'})"
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(90):
            await router.search_text("send an email")
            first = await router.call("execute", {"code": program})
            second = await router.call("execute", {"code": program})
    assert not first.get("isError") and second["isError"]
    assert "over quota: code_runs_per_minute is 1" in second["content"][0]["text"]
    records = [json.loads(line) for line in trail.read_text("utf-8").splitlines()]
    assert [(r["kind"], r["outcome"]) for r in records] == [
        ("tool-call", "ran"),
        ("code-run", "ran"),
        ("code-run", "over-quota"),  # its program never ran: no tool call before it
    ]


def test_results_spend_their_mib_and_the_calls_after_wait_for_the_refill() -> None:
    clock = Clock()
    book = QuotaBook(clock)
    limits = Limits(result_mib_per_hour=1.0)
    assert callable(book.admit("alice", "large", limits))
    book.spend_results("alice", "large", limits, 3 << 19)  # 1.5 MiB: half a MiB below zero
    over = book.admit("alice", "large", limits)
    assert isinstance(over, OverQuota) and over.quota == "result_mib_per_hour"
    assert over.retry_after == pytest.approx(1801.0)  # half an hour to refill half a MiB
    assert callable(book.admit("bob", "large", limits))
    clock.now += 1801.0
    assert callable(book.admit("alice", "large", limits))


@pytest.mark.processes
async def test_a_principal_past_its_result_mib_is_refused_until_the_refill(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path,
        {"large": script("large")},
        quotas={"default": {"upstreams": {"large": {"result_mib_per_hour": 1}}}},
    )
    async with raw_router(config) as router:
        await router.initialize()
        with anyio.fail_after(60):
            await router.search_text("text")
            big = await router.call("large__text", {"size": 2 << 20})  # 2 MiB, cut for the model
            after = await router.call("large__text", {"size": 10})
    assert not big.get("isError") and after["isError"]
    assert "large.result_mib_per_hour is 1" in after["content"][0]["text"]
