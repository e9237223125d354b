"""The large catalogs: real tools first, then renamed copies of the pools' tools as filler.

One catalog per size serves every labelled set at once (one store to fill and one HNSW
index to build per size, not one per set): the sets' own catalogs, then the pools' tools
in one seeded order of whole servers, less every server that is (or copies) a gold server
of any set (`benchmarks.suite.data.copies_of`), then copies of those pool tools. Copy k of
a tool of server `foo` sits on server `foo-copy-k`, so its qualified name and its embedded
text ("name (foo copy k) ...") differ from the original's, as a forked server's would.
Gold tools are never copied, so a copy never answers a query. Each size holds the smaller
ones as its prefix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.suite import data
from router.core.catalog import Catalog, ToolSpec
from router.evaluation.dataset import Query

SETS = ("msc_bench", "bfcl", "metatool")


@dataclass(frozen=True, slots=True)
class Source:
    """What every size is cut from: the sets' tools, the pool order, the sampled queries."""

    own: tuple[ToolSpec, ...]
    pool: tuple[ToolSpec, ...]
    queries: dict[str, tuple[Query, ...]]
    dropped_servers: int

    @property
    def real(self) -> int:
        return len(self.own) + len(self.pool)


def load_source(
    data_dir: Path,
    sets: Sequence[str],
    queries: int,
    seed: int,
    *,
    split: str = "test",
    limit: int | None = None,
) -> Source:
    """The sets (a seeded sample of `queries` from each one's `split` half) and the pools.
    `limit` (quick runs) keeps about that many tools of each set, its sample's gold tools
    first, and that many pool tools."""
    loaded = [
        data.load_set(
            data_dir,
            name,
            max_queries=queries,
            scale_queries=None,
            seed=seed,
            catalog_limit=limit,
            split=split,
        )
        for name in sets
    ]
    pool = data.load_pool(data_dir)
    dropped: frozenset[str] = frozenset()
    for query_set in loaded:
        dropped |= data.copies_of(pool, query_set)
    seen: set[tuple[str, str]] = set()
    own: list[ToolSpec] = []
    for query_set in loaded:
        for spec in query_set.specs:
            if (spec.server, spec.name) not in seen:
                seen.add((spec.server, spec.name))
                own.append(spec)
    order: list[ToolSpec] = []
    for spec in data.distractor_order(pool, dropped, seed):
        if (spec.server, spec.name) not in seen:  # a server listing a name twice keeps one
            seen.add((spec.server, spec.name))
            order.append(spec)
    return Source(
        own=tuple(own),
        pool=tuple(order[:limit]),
        queries={s.name: s.sample for s in loaded},
        dropped_servers=len(dropped),
    )


def copy_of(spec: ToolSpec, k: int) -> ToolSpec:
    """Copy `k` (1-based) of a pool tool, on its renamed server."""
    return dataclasses.replace(spec, server=f"{spec.server}-copy-{k}")


def specs(source: Source, size: int) -> list[ToolSpec]:
    """The first `size` tools: the sets', the pools', then copy 1 of the pools', copy 2..."""
    chosen = [*source.own, *source.pool][:size]
    k = 1
    while len(chosen) < size:
        if not source.pool:
            raise ValueError("no pool tools to copy")
        room = size - len(chosen)
        chosen.extend(copy_of(spec, k) for spec in source.pool[:room])
        k += 1
    return chosen


def catalog(source: Source, size: int) -> Catalog:
    return Catalog.from_specs(specs(source, size))
