"""What a server is for, as the user says it in the config (`description`) and as the server
says it at initialize, reaches the search answers that name the server."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from tests.support.http_serving import config, http_front, until_ready
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes


async def test_a_config_description_comes_before_what_the_server_says() -> None:
    described = script("guarded", description="Our team's notebook: meeting notes, to-dos")
    async with http_front(config({"guarded": described})) as front:
        with anyio.fail_after(60):
            await until_ready(front.state)
        async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
            response = await http.post("/v1/route", json={"query": "delete a note", "k": 2})
    assert response.status_code == 200, response.text
    servers = response.json()["match"]["servers"]
    assert [s["name"] for s in servers] == ["guarded"]
    assert servers[0]["about"].startswith("Our team's notebook: meeting notes, to-dos")
