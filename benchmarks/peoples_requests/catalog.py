"""`python -m benchmarks.peoples_requests.catalog`: list the set's real servers and write
their tools as `catalog.jsonl` (docs/architecture.md#datasets-and-metrics).

The servers are those of `benchmarks/data/peoples_requests/servers.json`, installed under
`.cache/servers/` by scripts/install-test-servers.sh. They are started through the router's
own upstream pool, as `mcp-router inspect` starts them, so each tool is the `ToolSpec` the
router indexes; the committed file lets the evaluation run offline, without the servers.
Run it again only to refresh the catalog: the manifest's sha256 then changes with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from router.config import load_config
from router.core.catalog import ToolSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "peoples_requests"
SERVERS = DATA / "servers.json"
WAIT_SECONDS = 60.0


def line_of(spec: ToolSpec) -> dict[str, Any]:
    """One catalog line: the dataset format's fields, the optional ones only when set."""
    line: dict[str, Any] = {
        "server": spec.server,
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
    }
    for key, value in (
        ("title", spec.title),
        ("annotations", spec.annotations),
        ("outputSchema", spec.output_schema),
    ):
        if value is not None:
            line[key] = value
    return line


async def listed(config_path: Path) -> list[ToolSpec]:
    """Every tool the config's servers list, once each has connected (or failed)."""
    from router.upstream import UpstreamPool

    config = load_config(config_path)
    async with UpstreamPool(config, eager=True) as pool:
        with anyio.move_on_after(WAIT_SECONDS):
            await pool.wait_settled()
        missing = sorted(set(config.servers) - {s for s, t in pool.tools().items() if t})
        if missing:
            raise SystemExit(f"no tools from {missing}: run scripts/install-test-servers.sh")
        return [spec for tools in pool.tools().values() for spec in tools]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=SERVERS)
    parser.add_argument("--out", type=Path, default=DATA / "catalog.jsonl")
    args = parser.parse_args(argv)
    specs = anyio.run(listed, args.config)
    specs.sort(key=lambda spec: (spec.server, spec.name))
    with args.out.open("w", encoding="utf-8") as handle:
        for spec in specs:
            handle.write(json.dumps(line_of(spec), ensure_ascii=False, sort_keys=True) + "\n")
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec.server] = counts.get(spec.server, 0) + 1
    print(f"{len(specs)} tools: {counts} -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
