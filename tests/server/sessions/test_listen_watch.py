"""A 2026-07-28 host's listen stream watches a resource only at a server it may see
(`router.server.sessions.listen`): a URI a hidden server also lists is watched at the visible
one, never at the hidden one. The upstreams are tests/upstreams/storeroom.py twice, `shop`
(denied by `router.policy`) and `store`, both listing `shop://config`, behind a real HTTP
front; `shop` comes first in name order, so among every upstream it would own the URI.

A `ui://` URI two upstreams share (tests/upstreams/charts.py and maps.py) is named by one
rule on every resource path, whoever asks.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

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


WIDGET = "ui://widget/app.html"
MAPS_WIDGET = "ui://mcp-router/maps/widget/app.html"
"""charts.py and maps.py both serve `ui://widget/app.html`; charts comes first in name
order, so among every upstream (the index's rule, `router.core.apps.UiUris`) maps' app is
this one, whoever asks."""


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # subscribe
async def test_a_shared_ui_uri_is_resolved_by_the_index_rule_on_every_resource_path(
    tmp_path: Path,
) -> None:
    """charts (the URI's first owner) is denied: a listen stream's watch, a subscription and
    a read of maps' app under its rewritten URI reach maps, and charts' own URI is unknown on
    each path, as it never existed; it does not fall to maps, the one visible owner left."""
    trail = tmp_path / "trail"
    cfg = config(
        {"charts": script("charts"), "maps": script("maps")},
        policy={"deny": ["charts/*"]},
        audit={"path": str(trail)},
    )
    async with http_front(cfg) as front:
        with anyio.fail_after(60):
            await until_ready(front.state)
            async with (
                streamable_client(front.mcp, mode="2026-07-28") as modern,
                modern.listen(resource_subscriptions=[WIDGET, MAPS_WIDGET]) as stream,
                streamable_client(front.mcp, mode="legacy") as legacy,
            ):
                honored = stream.honored.resource_subscriptions
                read = await modern.read_resource(MAPS_WIDGET)
                await legacy.subscribe_resource(MAPS_WIDGET)
                unknown = []
                for attempt in (
                    modern.read_resource(WIDGET),
                    legacy.subscribe_resource(WIDGET),
                    legacy.read_resource(WIDGET),
                ):
                    with pytest.raises(MCPError) as refused:
                        await attempt
                    unknown.append(refused.value.error.code)

    assert honored == [MAPS_WIDGET]
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert "maps app" in contents.text and str(contents.uri) == MAPS_WIDGET
    assert unknown == [types.INVALID_PARAMS] * 3
    records = [json.loads(line) for line in trail.read_text("utf-8").splitlines()]
    reached = [
        (r["kind"], r["server"], r["name"])
        for r in records
        if r["kind"] in ("resource-watch", "resource-subscribe") and r.get("server")
    ]
    assert reached == [
        ("resource-watch", "maps", MAPS_WIDGET),
        ("resource-subscribe", "maps", MAPS_WIDGET),
    ]
