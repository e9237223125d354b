"""The catalogs and queries of the in-process measurements: one public set's tools plus pool
distractors up to each total size (as `benchmarks.suite` builds them), and its queries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.suite import data
from router.core.catalog import ToolSpec


@dataclass(frozen=True, slots=True)
class Workload:
    set_name: str
    queries: tuple[str, ...]
    specs: dict[int, tuple[ToolSpec, ...]]
    """Total size asked -> the set's tools followed by distractors up to that size."""


def load(data_dir: Path, set_name: str, sizes: Sequence[int], queries: int, seed: int) -> Workload:
    query_set = data.load_set(
        data_dir, set_name, max_queries=queries, scale_queries=None, seed=seed
    )
    pool = data.load_pool(data_dir)
    distractors = data.distractor_order(pool, data.copies_of(pool, query_set), seed)
    own = len(query_set.specs)
    specs = {
        size: (
            data.scaled_specs(query_set, distractors, size - own)
            if size >= own
            else query_set.specs[:size]
        )
        for size in sizes
    }
    return Workload(set_name, tuple(q.text for q in query_set.sample), specs)


def write_jsonl(specs: Sequence[ToolSpec], path: Path) -> Path:
    """The specs as a `catalog.jsonl` (what `catalog_server.py` serves)."""
    with path.open("w", encoding="utf-8") as out:
        for spec in specs:
            line = {
                "server": spec.server,
                "name": spec.name,
                "description": spec.description,
                "inputSchema": spec.input_schema,
            }
            out.write(json.dumps(line) + "\n")
    return path
