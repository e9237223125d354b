"""A call to a tool of an upstream that has not listed its tools yet.

A call at start waits for the starting upstreams until the router's start-up wait ends
(`timeouts.connect`, `router/server/listing/resolution.py`). An upstream given a longer
connect timeout of its own may still be starting after it: a name the router cannot find
then is not simply "unknown" (the model would conclude the tool does not exist); the error
names the upstreams not listed yet, as a search's answer does, and says to call again;
only those the caller may see (`router.profiles`), as a search's answer names them.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest

from tests.support.serving import raw_router, script, write_config

pytestmark = pytest.mark.processes


async def test_a_call_past_the_start_up_wait_names_the_upstreams_not_listed_yet(
    tmp_path: Path,
) -> None:
    servers = {
        "hanging": script("silent", timeouts={"connect": 120}),  # never answers initialize
        "broken": {"command": str(tmp_path / "no-such-server")},  # cannot start at all
        "secret": script("silent", timeouts={"connect": 120}),  # starting, and hidden:
    }
    hidden = {"default": {"deny": ["secret/*"]}}  # stdio's caller is `default`: not named
    config = write_config(tmp_path, servers, timeouts={"connect": 0.5}, profiles=hidden)
    async with raw_router(config) as router:
        with anyio.fail_after(60):
            await router.initialize()
            # a search-mode router offers no event to wait on: poll until `broken` is down
            while True:
                if "Down, not searched: broken" in await router.search_text("anything"):
                    break
                await anyio.sleep(0.1)
            answer = await router.request("tools/call", {"name": "hanging__ask", "arguments": {}})
            await router.finish()
    error = answer["error"]
    assert error["code"] == types.INVALID_PARAMS
    assert error["message"] == (
        "unknown tool 'hanging__ask' so far; not listed yet, still starting: hanging "
        "(call again in a moment); down before listing its tools: broken"
    )
    assert error["data"] == {"starting": ["hanging"], "down": ["broken"]}
