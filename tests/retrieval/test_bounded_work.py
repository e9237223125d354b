"""Bounded work at a large catalog (issue 24, item 4): what grows with the catalog runs off
the event loop or a page at a time, so a router of 20,000 tools keeps serving while it works.

The upstream is benchmarks/perf/catalog_server.py serving 20,000 made-up tools over stdio
(the perf benchmark's large-catalog upstream; the tools are `benchmarks.bounded_work`'s),
behind the in-process HTTP front (BM25 only), which runs on the test's own event loop: a
ticker task there sees every stall of the
router's loop. The tests assert behaviour (the answer, and that the ticker kept ticking
while the work ran); the stall figures are `python -m benchmarks.bounded_work`'s.
The other bounded items have their tests beside their code: the batch followers'
timeout (test_http_batching.py), unscraped metrics (test_metrics.py), the tokenising
of a long text (test_limits.py), resources and prompts cut (test_serve_limits.py).
"""

from __future__ import annotations

import difflib
import gc
import random
import sys
import weakref
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from benchmarks.bounded_work import made_up_specs, ticking, write_catalog
from router.server.http.routing import Cursor
from router.server.listing.index import LiveIndex
from router.server.listing.suggestions import NameMatcher
from tests.support.http_serving import (
    SCRIPTS,
    Front,
    config,
    http_front,
    streamable_client,
    until_indexed,
)

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
CATALOG_SERVER = ROOT / "benchmarks" / "perf" / "catalog_server.py"
TOOLS = 20_000


@pytest.fixture(scope="module")
async def front(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Front]:
    catalog = write_catalog(tmp_path_factory.mktemp("catalog") / "catalog.jsonl", TOOLS)
    servers = {
        "big": {"command": sys.executable, "args": [str(CATALOG_SERVER), str(catalog)]},
        "growing": {"command": sys.executable, "args": [str(SCRIPTS / "growing.py")]},
    }
    cache = str(tmp_path_factory.mktemp("cache"))  # nothing cached: every upstream starts
    async with http_front(config(servers, cache_dir=cache, timeouts={"connect": 120})) as running:
        with anyio.fail_after(180):
            await until_indexed(running.state)
        yield running


async def test_an_unknown_tool_at_20k_tools_gets_suggestions_while_the_loop_ticks(
    front: Front,
) -> None:
    assert len(front.state.snapshot.catalog) > TOOLS
    async with streamable_client(front.mcp, mode="legacy") as client, ticking() as ticker:
        with anyio.fail_after(60), pytest.raises(MCPError) as unknown:
            await client.call_tool("big__tool_01233_fetchh", {})
        ticks = ticker.ticks

    assert unknown.value.code == types.INVALID_PARAMS
    assert unknown.value.data is not None
    assert "big__tool_01233_fetch" in unknown.value.data["suggestions"]
    assert ticks >= 3  # the loop served the ticker while the suggestions were found


async def test_v1_tools_pages_through_20k_tools_each_once_in_catalog_order(front: Front) -> None:
    names: list[str] = []
    pages = 0
    async with httpx2.AsyncClient(base_url=front.url, timeout=60) as http, ticking() as ticker:
        first = (await http.get("/v1/tools")).json()
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1_000, "format": "openai"}
            if cursor is not None:
                params["cursor"] = cursor
            page = (await http.get("/v1/tools", params=params)).json()
            names += [tool["name"] for tool in page["tools"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        too_many = await http.get("/v1/tools", params={"limit": 1_001})
        forged = await http.get("/v1/tools", params={"cursor": "not-a-cursor"})
        ticks = ticker.ticks

    catalog = front.state.snapshot.catalog
    assert names == [record.qualified_name for record in catalog.records]
    assert first["total"] == page["total"] == len(catalog) and pages == -(-len(catalog) // 1_000)
    assert len(first["tools"]) == 200 and first["next_cursor"] is not None
    assert {u["name"] for u in first["upstreams"]} == {"big", "growing"}  # on every page
    assert too_many.status_code == 422
    assert (forged.status_code, forged.json()) == (
        422,
        {"detail": "cursor: not a cursor this router made"},
    )
    assert ticks >= pages  # the pages were built off the loop


async def test_a_cursor_made_before_the_catalog_changed_is_409(front: Front) -> None:
    state = front.state
    async with httpx2.AsyncClient(base_url=front.url, timeout=60) as http:
        first = (await http.get("/v1/tools", params={"limit": 5})).json()
        generation = state.snapshot.generation
        assert first["generation"] == generation
        async with streamable_client(front.mcp, mode="legacy") as client:
            await client.call_tool("growing__grow", {})
        with anyio.fail_after(60):
            while state.snapshot.generation == generation:
                await state.changes.wait()
        stale = await http.get("/v1/tools", params={"cursor": first["next_cursor"]})
        again = await http.get("/v1/tools", params={"limit": 5})

    assert stale.status_code == 409
    assert stale.json() == {
        "detail": f"the catalog changed since this cursor was made (generation {generation}, "
        f"now {state.snapshot.generation}): list again from the start, without a cursor"
    }
    assert again.status_code == 200 and again.json()["generation"] > generation
    assert Cursor.decode(first["next_cursor"]).position == 5  # the next page's first tool


async def test_a_20k_tool_re_index_builds_off_the_loop() -> None:
    index = LiveIndex(None, None)
    specs = made_up_specs(TOOLS)
    async with ticking() as ticker:
        index.submit("big", specs)
        with anyio.fail_after(120):
            snapshot = await index.rebuild()
        ticks = ticker.ticks

    assert len(snapshot.catalog) == TOOLS and snapshot.generation == 1
    assert ticks >= 10  # naming, fingerprints and the BM25 index ran in worker threads


async def test_a_snapshot_swapped_out_is_freed_though_the_live_one_is_frozen() -> None:
    """Each swap takes the new snapshot out of the collector's full passes (`gc.freeze`, so
    that they do not stall the loop at 20k tools); what it replaces is still freed."""
    index = LiveIndex(None, None)
    index.submit("big", made_up_specs(300))
    first = await index.rebuild()
    assert first.retriever is not None and gc.get_freeze_count() > 0
    replaced = weakref.ref(first.retriever)
    names = weakref.ref(first.names) if first.names is not None else None
    del first
    index.submit("big", made_up_specs(200))
    second = await index.rebuild()

    assert replaced() is None and names is not None and names() is None
    assert second.names is not None and len(second.names.names) == 200


def test_bounded_suggestions_are_as_close_as_difflib_finds_among_every_name() -> None:
    """The matcher compares few names, yet its suggestions are as close as those of
    `get_close_matches` over all 20,000 (misspelt names, and a view that hides a third of
    the tools): the same scores, each suggestion visible. (Among names that tie, it may pick
    others than difflib.)"""
    specs = made_up_specs(TOOLS)
    names = [f"big__{spec.name}" for spec in specs]
    matcher = NameMatcher(names, [spec.name for spec in specs])
    hidden = frozenset(random.Random(3).sample(range(TOOLS), TOOLS // 3))
    visible = [name for position, name in enumerate(names) if position not in hidden]
    chooser = random.Random(24)

    def scores(typo: str, found: Sequence[str]) -> list[float]:
        return [difflib.SequenceMatcher(None, typo, name).ratio() for name in found]

    for _ in range(10):  # each compares difflib over all 20,000 names twice: seconds apiece
        base = chooser.choice(names)
        at = chooser.randrange(len(base))
        typo = base[:at] + chooser.choice("xyz_0-") + base[at + 1 :]
        everywhere = difflib.get_close_matches(typo, names, 3, 0.6)
        assert scores(typo, matcher.close(typo)) == scores(typo, everywhere)
        found = matcher.close(typo, hidden)
        assert set(found) <= set(visible)
        assert scores(typo, found) == scores(typo, difflib.get_close_matches(typo, visible, 3))
    assert matcher.close("tool_00009_fetch")[0] == "big__tool_00009_fetch"  # its bare name
    assert matcher.close("x" * 10_000) == ()  # no tool name is that long
