"""A 2026-07-28 host's listen stream watches a resource only at a server it may see
(`router.server.sessions.listen`): a URI a hidden server also lists is watched at the visible
one, never at the hidden one. The upstreams are tests/upstreams/storeroom.py twice, `shop`
(denied by `router.policy`) and `store`, both listing `shop://config`, behind a real HTTP
front; `shop` comes first in name order, so among every upstream it would own the URI.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.support.http_serving import SCRIPTS, config, http_front, streamable_client, until_ready
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes


def storeroom(log: Path) -> dict[str, object]:
    return script("storeroom") | {"args": [str(SCRIPTS / "storeroom.py"), str(log)]}


def subscribed(log: Path) -> list[str]:
    return [line for line in log.read_text("utf-8").splitlines() if "subscribe" in line]


async def until_subscribed(*logs: Path) -> None:
    """Until one of the upstreams was asked to subscribe (each logs a request before it
    answers; bound it). The watch is made in the background and the upstreams' logs offer
    nothing to wait on."""
    while True:
        if any(subscribed(log) for log in logs):
            return
        await anyio.sleep(0.05)


async def test_a_listen_watch_of_a_uri_a_hidden_server_shares_reaches_only_the_visible_one(
    tmp_path: Path,
) -> None:
    shop_log, store_log, trail = tmp_path / "shop.log", tmp_path / "store.log", tmp_path / "t"
    cfg = config(
        {"shop": storeroom(shop_log), "store": storeroom(store_log)},
        policy={"deny": ["shop/*"]},
        audit={"path": str(trail)},
    )
    async with http_front(cfg) as front:
        with anyio.fail_after(60):
            await until_ready(front.state)
            async with (
                streamable_client(front.mcp, mode="2026-07-28") as client,
                client.listen(resource_subscriptions=["shop://config"]) as stream,
            ):
                await until_subscribed(shop_log, store_log)
                honored = stream.honored

    assert "shop://config" in (honored.resource_subscriptions or [])
    assert subscribed(shop_log) == []
    assert subscribed(store_log)[0] == "resources/subscribe shop://config"  # then unsubscribe
    records = [json.loads(line) for line in trail.read_text("utf-8").splitlines()]
    watches = [r for r in records if r["kind"] == "resource-watch"]
    assert [(w["server"], w["name"]) for w in watches] == [("store", "shop://config")]
