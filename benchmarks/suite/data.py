"""The benchmark's data: the public query sets, their seeded query samples, and the
distractor pools that scale a set's catalog up.

A scaled catalog is the set's own catalog followed by the first N tools of one seeded
order of the pools' servers (whole servers, the last one cut to make exactly N), so each
size holds the smaller ones. The pools' copies of the set's gold servers are dropped first
(data/README.md): servers whose name or title reduces to a gold server's name, servers
with a tool whose name and description equal a gold tool's, and servers marked as
duplicates of those.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from router.core.catalog import ToolSpec
from router.evaluation.dataset import Query, load_queries

POOLS = ("pools/smithery_mcp_catalog", "pools/toolsdk_mcp_registry")
_WORD = re.compile(r"[a-z0-9]+")
_FILLER = frozenset({"mcp", "server", "servers", "model", "context", "protocol", "the", "api"})


@dataclass(frozen=True, slots=True)
class PoolTool:
    """A distractor tool and what identifies its server as a copy of another."""

    spec: ToolSpec
    title: str
    duplicate_of: str


@dataclass(frozen=True, slots=True)
class QuerySet:
    """One public set: its catalog, its queries in file order, and the sample used."""

    name: str
    specs: tuple[ToolSpec, ...]
    queries: tuple[Query, ...]
    sample: tuple[Query, ...]
    scale_sample: tuple[Query, ...]

    @property
    def gold_servers(self) -> frozenset[str]:
        return frozenset(s for q in self.queries for g in q.gold_groups for s, _ in g)

    @property
    def gold_tools(self) -> frozenset[tuple[str, str]]:
        return frozenset(key for q in self.queries for g in q.gold_groups for key in g)


def spec_of(raw: dict[str, Any]) -> ToolSpec:
    """A catalog line as `router.evaluation.dataset` reads it (same search text, same cache key)."""
    schema = raw.get("inputSchema")
    server_description = raw.get("server_description")
    title = raw.get("title")
    return ToolSpec(
        server=str(raw["server"]),
        name=str(raw["name"]),
        description=raw.get("description") or "",
        input_schema=schema if isinstance(schema, dict) else None,
        title=title if isinstance(title, str) else None,
        server_description=server_description if isinstance(server_description, str) else None,
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


SPLITS = ("dev", "test", "all")


def half(set_name: str, query_id: str) -> str:
    """The half a query belongs to: "dev" (choose and tune there) or "test" (report there).

    A hash of the set and the query's id, so a query never changes half when others are
    added or the sample changes, and the halves are the same on every machine.
    """
    digest = hashlib.sha256(f"{set_name}/{query_id}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


def sample(items: Sequence[Query], n: int | None, seed: int) -> tuple[Query, ...]:
    """`n` items drawn with `seed`, kept in file order; all of them when n is None or larger."""
    if n is None or n >= len(items):
        return tuple(items)
    chosen = sorted(random.Random(seed).sample(range(len(items)), n))
    return tuple(items[i] for i in chosen)


def load_set(
    data: Path,
    name: str,
    *,
    max_queries: int | None,
    scale_queries: int | None,
    seed: int,
    catalog_limit: int | None = None,
    split: str = "all",
) -> QuerySet:
    """Read a set; the sample is drawn from the `split` half of its queries (`half`).
    `catalog_limit` keeps the gold tools of the sample plus other tools up to that many
    (quick runs only)."""
    specs = tuple(spec_of(raw) for raw in _rows(data / name / "catalog.jsonl"))
    queries, _ = load_queries(data / name / "queries.jsonl")
    pool = [q for q in queries if split == "all" or half(name, q.id) == split]
    chosen = sample(pool, max_queries, seed)
    if catalog_limit is not None:
        specs = _slice(specs, chosen, catalog_limit, seed)
    scale = sample(chosen, scale_queries, seed + 1)
    return QuerySet(name, specs, tuple(queries), chosen, scale)


def _slice(
    specs: Sequence[ToolSpec], queries: Sequence[Query], limit: int, seed: int
) -> tuple[ToolSpec, ...]:
    gold = {key for q in queries for g in q.gold_groups for key in g}
    keep = [s for s in specs if (s.server, s.name) in gold]
    others = [s for s in specs if (s.server, s.name) not in gold]
    random.Random(seed).shuffle(others)
    return tuple(keep + others[: max(0, limit - len(keep))])


def load_pool(data: Path) -> list[PoolTool]:
    """Every tool of the distractor pools, in file order."""
    tools = []
    for pool in POOLS:
        for raw in _rows(data / pool / "catalog.jsonl"):
            tools.append(
                PoolTool(
                    spec=spec_of(raw),
                    title=str(raw.get("server_title") or ""),
                    duplicate_of=str(raw.get("duplicate_of_server") or ""),
                )
            )
    return tools


def server_core(name: str) -> str:
    """`@acme/Firecrawl-MCP-Server` and `Firecrawl MCP Server` both reduce to `firecrawl`."""
    last = name.rsplit("/", 1)[-1]
    return "".join(w for w in _WORD.findall(last.lower()) if w not in _FILLER)


def copies_of(pool: Iterable[PoolTool], query_set: QuerySet) -> frozenset[str]:
    """Pool servers that are (or copy) one of the set's gold servers."""
    cores = {c for c in map(server_core, query_set.gold_servers) if len(c) >= 3}
    by_key = {(s.server, s.name): s for s in query_set.specs}
    gold_texts = {
        (name, by_key[(server, name)].description)
        for server, name in query_set.gold_tools
        if (server, name) in by_key and by_key[(server, name)].description
    }
    tools = list(pool)
    dropped = {
        t.spec.server
        for t in tools
        if server_core(t.spec.server) in cores
        or (t.title and server_core(t.title) in cores)
        or (t.spec.name, t.spec.description) in gold_texts
    }
    dropped |= {t.spec.server for t in tools if t.duplicate_of in dropped}
    return frozenset(dropped)


def distractor_order(
    pool: Sequence[PoolTool], dropped: frozenset[str], seed: int
) -> list[ToolSpec]:
    """The pool's remaining tools, whole servers in one seeded order."""
    by_server: dict[str, list[ToolSpec]] = {}
    for tool in pool:
        if tool.spec.server not in dropped:
            by_server.setdefault(tool.spec.server, []).append(tool.spec)
    servers = sorted(by_server)
    random.Random(seed).shuffle(servers)
    return [spec for server in servers for spec in by_server[server]]


def scaled_specs(
    query_set: QuerySet, distractors: Sequence[ToolSpec], n: int
) -> tuple[ToolSpec, ...]:
    """The set's catalog plus the first `n` distractors (fewer if the pool runs out)."""
    return (*query_set.specs, *distractors[:n])
