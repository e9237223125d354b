"""FastMCP's own search transform as the peer baseline (optional: `pip install '.[bench]'`).

`fastmcp.server.transforms.search.BM25SearchTransform` is what a FastMCP user puts in
front of a large catalog: `search_tools` ranks the hidden tools with its BM25 index over
each tool's name, description and parameter names and descriptions. Here it is given the
same tools as the router (qualified names, descriptions, input schemas), and ranks with
the very method its `search_tools` calls, `_search`, whose order is its index's `query`:
accuracy uses `query` directly (100 deep, as the router is read); latency is timed through
`_search` on a sample, since that is what each search costs a FastMCP server (it hashes
the catalog on every call to notice changes).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import time
from collections.abc import Sequence
from typing import Any

import anyio

from router.accounting.formats import normalise_schema
from router.core.catalog import Catalog
from router.retrieval.retriever import CANDIDATE_DEPTH

NAME = "fastmcp_bm25"
_MODULE = "fastmcp.server.transforms.search.bm25"


def availability() -> tuple[str | None, str | None]:
    """(fastmcp version, None) when usable, else (None, why not)."""
    try:
        module = importlib.import_module(_MODULE)
    except ImportError as exc:
        return None, (
            f"fastmcp is not installed ({exc}); install the extra: pip install -e '.[bench]'"
        )
    version = importlib.metadata.version("fastmcp")
    # private internals, read as of fastmcp 4.2: say so plainly if a release moved them
    if not all(hasattr(module, n) for n in ("BM25SearchTransform", "_BM25Index")) or not all(
        hasattr(getattr(module, c), m)
        for c, m in (("BM25SearchTransform", "_search"), ("_BM25Index", "query"))
    ):
        return None, f"fastmcp {version} no longer has the BM25 search internals read here"
    return version, None


class FastMCPRanker:
    """FastMCP's BM25 search transform over one catalog."""

    name = NAME

    def __init__(self, catalog: Catalog, texts: Sequence[str]) -> None:
        module: Any = importlib.import_module(_MODULE)
        tool: Any = importlib.import_module("fastmcp.tools.base").Tool  # optional: no stubs

        self._catalog = catalog
        self._texts = texts
        self._tools = [
            tool(
                name=r.qualified_name,
                description=r.description or None,
                parameters=normalise_schema(r.input_schema),
            )
            for r in catalog.records
        ]
        self._transform: Any = module.BM25SearchTransform(max_results=CANDIDATE_DEPTH)
        started = time.perf_counter()
        anyio.run(self._transform._search, self._tools, "warm up")  # builds its index
        self.build_seconds = time.perf_counter() - started

    def rank(self, index: int) -> tuple[list[int], float]:
        started = time.perf_counter()
        found: list[int] = self._transform._index.query(self._texts[index], CANDIDATE_DEPTH)
        elapsed = (time.perf_counter() - started) * 1000
        names = self._transform._indexed_names
        return [self._catalog.position(names[i]) for i in found], elapsed

    def search_latencies(self, indices: Sequence[int]) -> list[float]:
        """Milliseconds of `_search` (catalog hash check included) for these queries."""

        async def timed() -> list[float]:
            times = []
            for i in indices:
                started = time.perf_counter()
                await self._transform._search(self._tools, self._texts[i])
                times.append((time.perf_counter() - started) * 1000)
            return times

        return anyio.run(timed)
