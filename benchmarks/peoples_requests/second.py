"""`python -m benchmarks.peoples_requests.second`: the second people's set's catalog
(benchmarks/data/peoples_requests_2/), written from the public tool catalog of
/work/shared/data (the Smithery pool: each server's own `tools/list`).

`sources.json` names, for each of the set's ten servers, the pool's server it is; each of
its tools becomes one catalog line under the set's short server name (name, description,
input schema, title where the pool has one), so the evaluation reads only the committed
file. Run it again only to refresh the catalog: the manifest's sha256 then changes with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "peoples_requests_2"
SOURCES = DATA / "sources.json"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
RECORDED = ("sources.json", "catalog.jsonl", "requests.jsonl", "dev.jsonl", "test.jsonl")
"""The files whose sha256 the second set's manifest records."""


def lines_of(pool_rows: Sequence[dict[str, Any]], sources: dict[str, str]) -> list[dict[str, Any]]:
    """The set's catalog lines: each named pool server's tools under its short name, in the
    pool's order, servers in `sources`' order."""
    lines = []
    for short, pooled in sources.items():
        rows = [row for row in pool_rows if row["server"] == pooled]
        if not rows:
            raise SystemExit(f"{pooled} is not in the pool")
        for row in rows:
            line: dict[str, Any] = {
                "server": short,
                "name": row["name"],
                "description": row.get("description") or "",
                "inputSchema": row.get("inputSchema") or {"type": "object"},
            }
            if row.get("title"):
                line["title"] = row["title"]
            lines.append(line)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=DATA / "catalog.jsonl")
    args = parser.parse_args(argv)
    recorded = json.loads(SOURCES.read_text(encoding="utf-8"))
    pool = args.data / recorded["pool"]
    rows = [json.loads(line) for line in pool.read_text(encoding="utf-8").splitlines() if line]
    lines = lines_of(rows, recorded["servers"])
    with args.out.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
    counts: dict[str, int] = {}
    for line in lines:
        counts[line["server"]] = counts.get(line["server"], 0) + 1
    print(f"{len(lines)} tools: {counts} -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
