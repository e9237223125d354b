"""`router.rerank: true`: `mcp-router serve` over stdio re-scores each search's first tools
with the shipped cross-encoder (`models/minilm-l6-rerank`), with the real model, in front of
the example servers (time, git, fetch from PyPI; everything, memory, filesystem from npm).

The people's requests of the dev half whose gold tools are on those servers are searched
through `search_tools`; the reranked answers must find them about as well as the benchmark
measured (`benchmarks/results/rerank.json`), and the log must say what was loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from benchmarks.peoples_requests.split import DATA as PEOPLE
from router.evaluation.dataset import load_queries
from router.retrieval.rerank import Reranker
from tests.support import serving
from tests.support.serving import (
    Installed,
    example_servers,
    raw_router,
    until_indexed,
    write_config,
)

installed = serving.installed

pytestmark = [pytest.mark.model, pytest.mark.processes]

SERVERS = {"time", "git", "fetch", "everything", "memory", "filesystem"}
MIN_TOP1 = 0.36
MIN_HIT = 0.77
"""Floors for the 66 example-server requests of the dev half, three requests below what the
reranked router gave when the model shipped (top-1 0.41, hit@5 0.82; without the reranker
0.38 and 0.77)."""


def example_requests() -> list[tuple[str, list[set[str]]]]:
    queries, _ = load_queries(PEOPLE / "dev.jsonl")
    chosen = []
    for query in queries:
        groups = [{f"{server}__{name}" for server, name in group} for group in query.gold_groups]
        if all(key.split("__")[0] in SERVERS for group in groups for key in group):
            chosen.append((query.text, groups))
    return chosen


async def test_a_reranked_router_finds_the_example_servers_tools_for_peoples_requests(
    installed: Installed, tmp_path: Path
) -> None:
    requests = example_requests()
    assert len(requests) >= 15
    config = write_config(tmp_path, example_servers(installed, tmp_path), k=5, rerank=True)
    top1 = hits = 0
    async with raw_router(config, bm25_only=False) as router:
        await router.initialize()
        with anyio.fail_after(120):
            await until_indexed(router.search_text)
        with anyio.fail_after(120):
            for text, groups in requests:
                result = await router.call("search_tools", {"query": text})
                names = [tool["name"] for tool in result["structuredContent"]["tools"]]
                top1 += bool(names) and any(names[0] in group for group in groups)
                hits += all(any(name in group for name in names) for group in groups)
        lines = await router.finish()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)  # stdout: JSON-RPC only
    log = (tmp_path / "router.log").read_text("utf-8")
    shipped = Reranker.bundled()
    shipped.load()
    assert f"reranker minilm-l6-rerank: the first {shipped.depth} at weight" in log
    assert top1 / len(requests) >= MIN_TOP1 and hits / len(requests) >= MIN_HIT
