"""What a host pays for tool schemas: every tool of the example servers listed directly,
against the router's default listing and its query-scoped (k=5) listings.

    python -m benchmarks.listing_tokens [--k 5] [--bm25-only] [--config examples/servers.json]
    python -m benchmarks.listing_tokens --table-only   # re-render the READMEs from the JSON

Runs the router's own state in process (the upstream pool and the live index, with the real
model unless --bm25-only) on the example servers of `examples/servers.json` (time, git,
fetch from PyPI; everything, memory, filesystem from npm; no pins), so each listing holds
exactly the tools `mcp-router serve` lists. Tokens are cl100k
(`router.accounting.TokenCounter`) of the list as a host sends it, in the MCP, OpenAI and
Anthropic formats.

"direct" is what a host connected to the servers one by one is sent: in MCP format each
server's own `tools/list` result as it sent it (every field, one list per server, summed,
as `mcp-router inspect` counts `direct_tokens`); in the OpenAI and Anthropic formats every
tool under its own name. "router_all_tools" is every tool as the router would list it
(qualified `server__tool` names, the fields the router relays, one list), the "everything
listed" figure of the benchmark suite's live table. `mcp_all_tools_breakdown` measures the
steps from one to the other.

Writes `benchmarks/results/listing-tokens.json` and the sections between the listing-tokens
markers of README.md (`summary`) and benchmarks/README.md (`markdown`), which are made from
that file alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from benchmarks.example_servers import EXAMPLE_CONFIG, example_config
from benchmarks.provenance import head_commit
from benchmarks.suite.readme import replace_between
from router.accounting.formats import ToolFormat, serialise, to_mcp
from router.accounting.tokens import ENCODING, TokenCounter
from router.config import parse_config
from router.core.catalog import ToolRecord
from router.server.lifecycle.app import load_default_embedder, router_state
from router.upstream import UpstreamState

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "listing-tokens.json"
README = ROOT / "README.md"
"""Gets the short form (`summary`)."""
BENCH_README = HERE / "README.md"
"""Gets the table (`markdown`)."""
START, END = "<!-- listing-tokens:start -->", "<!-- listing-tokens:end -->"
QUERIES = (
    "what time is it in Tokyo",
    "convert 3pm in New York to Paris time",
    "show the git log of this repository",
    "what changed in my working tree since the last commit",
    "fetch the content of https://example.com",
    "remember that Alice works at Acme",
    "list the files in the shared folder",
    "read a text file",
    "echo a message back",
    "add two numbers",
)

JsonObject = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Listings:
    catalog: tuple[ToolRecord, ...]
    """Every tool as the router holds it (qualified names), servers in the config's order
    as `mcp-router inspect` and the suite's live mode list them (the order moves a count by
    a token or so at the joins between entries)."""
    own_lists: dict[str, tuple[JsonObject, ...]]
    """Each server's own `tools/list` entries, as it sent them, in the config's order."""
    default: tuple[ToolRecord, ...]
    routed: dict[str, tuple[ToolRecord, ...]]
    tools_per_server: dict[str, int]
    server_info: dict[str, JsonObject]
    """What each server said it is, and the protocol revision it was opened with."""
    instructions: str = ""
    """The `initialize` instructions; their directory of servers ends `search_tools`'
    description too (`router.server.listing.door`)."""
    directory: str = ""

    @property
    def direct(self) -> tuple[ToolRecord, ...]:
        """Every tool in the router's form under its own name, as a host lists it directly."""
        return tuple(dataclasses.replace(r, qualified_name=r.name) for r in self.catalog)


async def collect(example: Path, k: int, bm25_only: bool) -> Listings:
    """Start the router's state on the example servers and take its listings."""
    with tempfile.TemporaryDirectory() as scratch:
        data = example_config(Path(scratch), config=example)
        config = parse_config({**data, "router": {**data["router"], "k": k, "pin": []}})
        embedder = None if bm25_only else load_default_embedder(config)
        async with router_state(config, embedder) as state:
            with anyio.fail_after(180):
                statuses = await state.pool.wait_settled()
                down = [n for n, s in statuses.items() if s.state is not UpstreamState.HEALTHY]
                if down:
                    raise SystemExit(f"upstreams down: {down}")
                while state.pending_upstreams():
                    await state.changes.wait()
                snapshot = state.snapshot
                pinned, meta = snapshot.pinned, state.meta_tools
                routed = {}
                for query in QUERIES:
                    # tools/list with this query: pins, then the top k, then the meta-tools
                    top = [r.tool for r in await state.search(query, k) if r.tool not in pinned]
                    routed[query] = (*pinned, *top, *meta)
            order = list(state.pool.upstreams)  # the config's order
            own_lists = {
                name: tuple(
                    tool.model_dump(by_alias=True, mode="json", exclude_none=True)
                    for tool in state.pool.upstream(name).listing.tools
                )
                for name in order
            }
            return Listings(
                catalog=tuple(
                    sorted(snapshot.catalog.records, key=lambda r: order.index(r.server))
                ),
                own_lists=own_lists,
                default=(*pinned, *meta),
                routed=routed,
                tools_per_server={s: len(state.index.tools_of(s)) for s in sorted(statuses)},
                server_info={
                    name: {
                        "name": status.server_name,
                        "version": status.server_version,
                        "protocol": status.protocol_version,
                    }
                    for name, status in state.pool.statuses().items()
                },
                instructions=state.instructions,
                directory=state.door.directory(
                    state.pool.upstreams, config.router.servers_summary_tokens
                ),
            )


def _percent_saved(listed: float, full: int) -> float:
    return round(100 * (1 - listed / full), 2)


def _own_list_tokens(counter: TokenCounter, entries: Sequence[JsonObject]) -> int:
    return counter.count_text(serialise({"tools": list(entries)}))


def breakdown(listings: Listings, counter: TokenCounter) -> dict[str, Any]:
    """From the servers' own lists to the router's list of every tool, one step at a time
    (MCP format): the wrappers of separate lists, the fields the router does not relay, and
    the `server__` prefix of qualified names."""
    records = {(r.server, r.name): r for r in listings.catalog}
    not_relayed: dict[str, int] = {}
    added: dict[str, int] = {}
    relayed_only: list[JsonObject] = []
    for server, entries in listings.own_lists.items():
        for entry in entries:
            record = records[(server, entry["name"])]
            ours = to_mcp(dataclasses.replace(record, qualified_name=record.name))
            for key in entry.keys() - ours.keys():
                not_relayed[key] = not_relayed.get(key, 0) + 1
            for key in ours.keys() - entry.keys():
                added[key] = added.get(key, 0) + 1
            relayed_only.append({key: value for key, value in entry.items() if key in ours})
    own_entries = [e for entries in listings.own_lists.values() for e in entries]
    return {
        "servers_own_lists_summed": sum(
            _own_list_tokens(counter, entries) for entries in listings.own_lists.values()
        ),
        "servers_entries_one_list": _own_list_tokens(counter, own_entries),
        "servers_entries_one_list_relayed_fields_only": _own_list_tokens(counter, relayed_only),
        "router_entries_own_names_one_list": counter.count_tools(listings.direct, ToolFormat.MCP),
        "router_entries_qualified_names_one_list": counter.count_tools(
            listings.catalog, ToolFormat.MCP
        ),
        "fields_not_relayed": dict(sorted(not_relayed.items())),
        "fields_added_by_router": dict(sorted(added.items())),
    }


def report(listings: Listings, k: int, model: str | None) -> dict[str, Any]:
    counter = TokenCounter()
    parts = breakdown(listings, counter)
    formats: dict[str, Any] = {}
    for fmt in ToolFormat:
        if fmt is ToolFormat.MCP:
            direct = parts["servers_own_lists_summed"]
        else:
            direct = counter.count_tools(listings.direct, fmt)
        default = counter.count_tools(listings.default, fmt)
        routed = {q: counter.count_tools(tools, fmt) for q, tools in listings.routed.items()}
        mean = statistics.fmean(routed.values())
        formats[fmt.value] = {
            "direct_all_tools": direct,
            "router_all_tools": counter.count_tools(listings.catalog, fmt),
            "router_default": default,
            "router_default_saved_percent": _percent_saved(default, direct),
            f"router_k{k}_mean": round(mean, 1),
            f"router_k{k}_min": min(routed.values()),
            f"router_k{k}_max": max(routed.values()),
            f"router_k{k}_saved_percent": _percent_saved(mean, direct),
            f"router_k{k}_per_query": routed,
        }
    return {
        "benchmark": "listing-tokens",
        "encoding": ENCODING,
        "model": model or "none (BM25 only)",
        "k": k,
        "commit": head_commit(),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "servers": listings.tools_per_server,
        "server_info": listings.server_info,
        "tool_count": len(listings.catalog),
        "listed": {
            "router_default": [r.qualified_name for r in listings.default],
            f"router_k{k}": {q: [r.qualified_name for r in t] for q, t in listings.routed.items()},
        },
        "tokens": formats,
        "mcp_all_tools_breakdown": parts,
        "servers_summary": {
            "budget": parse_config({"mcpServers": {}}).router.servers_summary_tokens,
            "directory_tokens": counter.count_text(listings.directory),
            "instructions_tokens": counter.count_text(listings.instructions),
            "directory": listings.directory,
        },
    }


# -- the README sections: made from the JSON alone ------------------------------------------


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _tools(count: int) -> str:
    return f"{count} tool" if count == 1 else f"{count} tools"


def _fields(counts: Mapping[str, int]) -> str:
    return ", ".join(f"`{key}` on {_tools(count)}" for key, count in counts.items()) or "none"


def summary(result: Mapping[str, Any]) -> str:
    """The top-level README's paragraph."""
    k = result["k"]
    mcp = result["tokens"]["mcp"]
    return (
        f"On the example servers of `examples/servers.json` ({len(result['servers'])} servers, "
        f"{result['tool_count']} tools), "
        f"listing every tool directly costs a host {_n(mcp['direct_all_tools'])} tokens; the "
        f"router's default listing costs {_n(mcp['router_default'])} "
        f"({mcp['router_default_saved_percent']:.1f}% less), and a query-scoped top {k} with "
        f"the meta-tools {_n(mcp[f'router_k{k}_mean'])} on average over "
        f"{len(mcp[f'router_k{k}_per_query'])} tasks ({_n(mcp[f'router_k{k}_min'])} to "
        f"{_n(mcp[f'router_k{k}_max'])}). MCP `tools/list` as sent, {result['encoding']}; "
        f"`tokens.mcp` of `benchmarks/results/listing-tokens.json`, written by "
        f"`python -m benchmarks.listing_tokens` at commit `{result['commit']}` (the other "
        "formats, and what each count holds: [benchmarks/README.md](benchmarks/README.md))."
    )


def markdown(result: Mapping[str, Any]) -> str:
    """The benchmark README's section: the run, the listings in every format, the breakdown."""
    k = result["k"]
    tokens = result["tokens"]
    formats = list(tokens)
    machine = result["machine"]
    servers = "; ".join(
        f"{name}: {info['name']} {info['version']} (protocol {info['protocol']}), "
        f"{_tools(result['servers'][name])}"
        for name, info in result["server_info"].items()
    )
    lines = [
        f"Run `python -m benchmarks.listing_tokens` at commit `{result['commit']}` on "
        f"{machine['platform']}, {machine['cpus']} CPUs (load average "
        f"{machine['load_average_1m_at_end']} at the end); model `{result['model']}`, "
        f"k = {k}, {result['encoding']}. Servers: {servers}.",
        "",
        "| listing | tools | " + " | ".join(formats) + " |",
        "|---|---|" + "---|" * len(formats),
    ]

    def row(label: str, tools: int | str, cells: list[str]) -> None:
        lines.append(f"| {label} | {tools} | " + " | ".join(cells) + " |")

    row(
        "every tool, listed directly (`direct_all_tools`)",
        result["tool_count"],
        [_n(tokens[f]["direct_all_tools"]) for f in formats],
    )
    row(
        "every tool, as the router would list it (`router_all_tools`)",
        result["tool_count"],
        [_n(tokens[f]["router_all_tools"]) for f in formats],
    )
    row(
        "router default: pins + meta-tools (`router_default`)",
        len(result["listed"]["router_default"]),
        [
            f"{_n(tokens[f]['router_default'])} ({tokens[f]['router_default_saved_percent']:.1f}%)"
            for f in formats
        ],
    )
    per_query = result["listed"][f"router_k{k}"]
    row(
        f"query-scoped: top {k} + meta-tools, mean of {len(per_query)} tasks, min-max "
        f"(`router_k{k}_*`)",
        len(next(iter(per_query.values()))),
        [_routed_cell(tokens[f], k) for f in formats],
    )
    parts = result["mcp_all_tools_breakdown"]
    own = parts["servers_own_lists_summed"]
    one = parts["servers_entries_one_list"]
    relayed = parts["servers_entries_one_list_relayed_fields_only"]
    own_names = parts["router_entries_own_names_one_list"]
    qualified = parts["router_entries_qualified_names_one_list"]
    added = parts["fields_added_by_router"]
    lines += [
        "",
        "Percentages: saved against the first row, in the same format.",
        "",
        f"The two counts of every tool (MCP format: {_n(own)} and {_n(qualified)}) take the same "
        f"{result['tool_count']} tools with the same encoding and differ in what they count, "
        f"step by step (`mcp_all_tools_breakdown`): the servers' own `tools/list` results, one "
        f"list per server, summed: {_n(own)}; their entries in one list: {_n(one)}; without "
        f"the fields the router does not relay ({_fields(parts['fields_not_relayed'])}): "
        f"{_n(relayed)}; the router's entries under the servers' own names"
        + (f" (it adds {_fields(added)})" if added else "")
        + f": {_n(own_names)}; under its qualified `server__tool` names: {_n(qualified)}. "
        'The first is `direct_tokens` of `mcp-router inspect` and the "own tools/list" total '
        'of the suite\'s live table above; the last is the "everything listed" MCP figure of '
        'that table, which its "saved" percentages are taken against.',
        "",
        *_summary_lines(result.get("servers_summary")),
        f"| task | tools listed (top {k}) | " + " | ".join(formats) + " |",
        "|---|---|" + "---|" * len(formats),
    ]
    meta = set(result["listed"]["router_default"])
    for query, names in per_query.items():
        top = ", ".join(f"`{n}`" for n in names if n not in meta)
        counts = [_n(tokens[f][f"router_k{k}_per_query"][query]) for f in formats]
        lines.append(f"| {query} | {top} | " + " | ".join(counts) + " |")
    return "\n".join(lines)


def _summary_lines(summary: Mapping[str, Any] | None) -> list[str]:
    """What naming the servers costs (`servers_summary`): in the instructions, and again at
    the end of `search_tools`' description, so in every listing above that holds it."""
    if summary is None:
        return []
    return [
        f'The directory of servers (docs/serving.md, "What the model is told of the '
        f'servers") costs {summary["directory_tokens"]} tokens of its '
        f"{summary['budget']}-token budget (`router.servers_summary_tokens`), counted in "
        f"`search_tools`' description in every listing above; the `initialize` instructions "
        f"that carry it too are {summary['instructions_tokens']} tokens "
        "(`servers_summary`).",
        "",
    ]


def _routed_cell(counts: Mapping[str, Any], k: int) -> str:
    mean, saved = counts[f"router_k{k}_mean"], counts[f"router_k{k}_saved_percent"]
    low, high = counts[f"router_k{k}_min"], counts[f"router_k{k}_max"]
    return f"{_n(mean)} ({saved:.1f}%), {_n(low)}-{_n(high)}"


def update_readmes(result: Mapping[str, Any]) -> None:
    bodies = {README: summary(result), BENCH_README: markdown(result)}
    for readme, body in bodies.items():
        text = readme.read_text(encoding="utf-8")
        readme.write_text(replace_between(text, START, END, body), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.listing_tokens")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--bm25-only", action="store_true", help="rank without the model")
    parser.add_argument("--config", type=Path, default=EXAMPLE_CONFIG)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--no-readme", action="store_true", help="leave the READMEs alone")
    parser.add_argument(
        "--table-only", action="store_true", help="re-render the READMEs from --out"
    )
    args = parser.parse_args(argv)
    if args.table_only:
        update_readmes(json.loads(args.out.read_text(encoding="utf-8")))
        print(f"rewrote the listing-tokens sections of {README} and {BENCH_README}")
        return 0
    listings = anyio.run(collect, args.config, args.k, args.bm25_only)
    model = None if args.bm25_only else parse_config({"mcpServers": {}}).router.model
    result = report(listings, args.k, model)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2) + "\n"
    args.out.write_text(text, encoding="utf-8")
    if not args.no_readme:
        update_readmes(json.loads(text))
    mcp = result["tokens"]["mcp"]
    print(
        f"{result['tool_count']} tools of {len(listings.tools_per_server)} servers: "
        f"{mcp['direct_all_tools']} tokens listed directly (MCP format, {ENCODING}); "
        f"router default {mcp['router_default']} ({mcp['router_default_saved_percent']}% saved); "
        f"k={args.k} mean {mcp[f'router_k{args.k}_mean']} "
        f"({mcp[f'router_k{args.k}_saved_percent']}% saved, "
        f"range {mcp[f'router_k{args.k}_min']}-{mcp[f'router_k{args.k}_max']})"
    )
    print(f"wrote {args.out}" + ("" if args.no_readme else f", {README}, {BENCH_README}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
