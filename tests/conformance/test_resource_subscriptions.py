"""Resource subscriptions through the router: a host subscribed to an upstream resource hears
`notifications/resources/updated` when the upstream says it changed, whether the router
speaks a handshake revision to the upstream (`resources/subscribe`) or 2026-07-28
(`subscriptions/listen`).

The upstream is the conformance fixture over streamable HTTP; its `touch_watched_resource`
tool says that `test://watched-resource` changed. The router runs over stdio.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError

from benchmarks.conformance import fixture_server
from tests.support.serving import router_parameters, write_config

pytestmark = pytest.mark.processes

WATCHED = "test://watched-resource"


@pytest.fixture(scope="module")
def fixture_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fixture_server(tmp_path_factory.mktemp("fixture") / "fixture.log") as url:
        yield url


async def subscribe(client: Client, uri: str) -> None:
    """`resources/subscribe` (the SDK's own method warns that 2026-07-28 dropped it)."""
    request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
    await client.session.send_request(request, types.EmptyResult)


async def unsubscribe(client: Client, uri: str) -> None:
    request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
    await client.session.send_request(request, types.EmptyResult)


@pytest.mark.parametrize("protocol", ["2025-11-25", "auto"])  # auto: 2026-07-28 here
async def test_a_subscribed_host_hears_that_an_upstream_resource_changed(
    fixture_url: str, tmp_path: Path, protocol: str
) -> None:
    upstream = {"url": fixture_url, "prefix": False, "protocol": protocol}
    config = write_config(tmp_path, {"fixture": upstream}, mode="all")
    updated: list[str] = []
    heard = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            heard.set()

    parameters = router_parameters(config)
    async with Client(parameters, mode="legacy", message_handler=on_message) as client:
        with anyio.fail_after(30):
            capabilities = client.server_capabilities
            await client.list_tools()  # waits until the upstream is indexed
            await subscribe(client, WATCHED)
            # the router subscribes at the upstream in its own time: touch until heard
            with anyio.move_on_after(20):
                while not heard.is_set():
                    await client.call_tool("touch_watched_resource", {})
                    with anyio.move_on_after(0.5):
                        await heard.wait()
            await unsubscribe(client, WATCHED)

    assert capabilities.resources is not None and capabilities.resources.subscribe is True
    assert updated and set(updated) == {WATCHED}


async def test_subscribing_to_a_resource_no_upstream_has_is_invalid_params(
    fixture_url: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"fixture": {"url": fixture_url}}, mode="all")
    async with Client(router_parameters(config), mode="legacy") as client:
        with anyio.fail_after(30):
            await client.list_tools()
            with pytest.raises(MCPError) as caught:
                await subscribe(client, "test://no-such-resource")

    assert caught.value.code == types.INVALID_PARAMS
