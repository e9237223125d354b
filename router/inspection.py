"""What `mcp-router inspect` reports: each upstream's health and the token bill of its tools.

Pure: it takes a `PoolSnapshot` (the pool as the command found it), so it is tested without
starting a server. Tokens are counted with `TokenCounter` (cl100k) on two forms:
- catalog form: the entries the router itself lists (qualified name, title, description,
  inputSchema, annotations), in each host format; the listings are compared on this form;
- direct: each upstream's own `tools/list` result as it sends it (outputSchema and all),
  what a host connected to the upstreams without the router pays (MCP format).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from router.accounting.formats import ToolFormat, serialise
from router.accounting.tokens import TokenCounter
from router.catalog import Catalog, ToolRecord, ToolSpec
from router.config import RouterConfig
from router.injection import Flag, scan_tools
from router.meta_tools import meta_tool_records
from router.tool_patterns import resolve_pins
from router.upstream.state import UpstreamStatus
from router.upstream.transport import transport_name

DISABLED = "disabled"


@dataclass(frozen=True, slots=True)
class PoolSnapshot:
    """The enabled upstreams at one moment: status, tools, and the raw listed tools."""

    statuses: Mapping[str, UpstreamStatus]
    tools: Mapping[str, tuple[ToolSpec, ...]]
    listed: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """Each upstream's `tools/list` entries as JSON (by alias, no nulls)."""


@dataclass(frozen=True, slots=True)
class UpstreamReport:
    name: str
    state: str
    """healthy | unhealthy | connecting | disabled."""
    transport: str
    protocol_version: str | None
    server_name: str | None
    server_version: str | None
    tool_count: int
    tokens: int | None
    """Its tools in catalog form, as one MCP `tools/list`; None when it never listed."""
    direct_tokens: int | None
    """Its own `tools/list` result as it sent it; None when it never listed."""
    connect_seconds: float | None
    attempts: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class Listing:
    """A tool list the host could be sent, priced in every format."""

    label: str
    tools: int
    tokens: dict[str, int]
    saved_percent: dict[str, float | None]
    """Against the full listing; None when there is nothing to save from."""
    saved_percent_direct: float | None = None
    """MCP tokens against the upstreams' direct listings together."""
    approximate: bool = False
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class InspectReport:
    config: str | None
    encoding: str
    k: int
    upstreams: tuple[UpstreamReport, ...]
    full: Listing
    default: Listing
    typical: Listing
    flags: tuple[Flag, ...]

    @property
    def direct_tokens(self) -> int:
        """What a host pays listing every upstream directly: one `tools/list` each."""
        return sum(u.direct_tokens or 0 for u in self.upstreams)

    def to_json(self) -> dict[str, Any]:
        """The `--json` object; its shape is documented in `router.commands.inspect`."""
        return {
            "config": self.config,
            "encoding": self.encoding,
            "k": self.k,
            "upstreams": [_upstream_json(u) for u in self.upstreams],
            "totals": {
                "upstreams": len(self.upstreams),
                "healthy": sum(u.state == "healthy" for u in self.upstreams),
                "tools": self.full.tools,
                "tokens": self.full.tokens,
                "direct_tokens": self.direct_tokens,
            },
            "listings": {
                "full": _listing_json(self.full),
                "default": _listing_json(self.default),
                "typical_k": _listing_json(self.typical),
            },
            "warnings": [_flag_json(f) for f in self.flags],
        }


def build_report(
    config: RouterConfig, pool: PoolSnapshot, counter: TokenCounter, k: int
) -> InspectReport:
    """Price every upstream's tools and the listings the router would send instead.

    Servers of the config missing from `pool.statuses` are reported as disabled.
    """
    order = [name for name in config.servers if name in pool.statuses]
    catalog = Catalog.from_specs(spec for name in order for spec in pool.tools.get(name, ()))
    records = catalog.records
    by_server: dict[str, list[ToolRecord]] = {}
    for record in records:
        by_server.setdefault(record.server, []).append(record)

    upstreams = tuple(
        _upstream(name, config, pool, by_server.get(name, []), counter) for name in config.servers
    )
    direct = sum(u.direct_tokens or 0 for u in upstreams)
    meta = meta_tool_records(config.router.k)
    pinned = resolve_pins(catalog, config.router.pin)  # as the served `tools/list` pins
    full = _full_listing(records, direct, counter)
    default = _listing(
        f"default listing ({len(pinned)} pinned + {len(meta)} meta-tools)",
        [*pinned, *meta],
        full,
        direct,
        counter,
    )
    return InspectReport(
        config=str(config.source) if config.source else None,
        encoding=counter.encoding_name,
        k=k,
        upstreams=upstreams,
        full=full,
        default=default,
        typical=_typical(records, [*pinned, *meta], k, full, direct, counter),
        flags=tuple(scan_tools(records)),
    )


def _upstream(
    name: str,
    config: RouterConfig,
    pool: PoolSnapshot,
    records: list[ToolRecord],
    counter: TokenCounter,
) -> UpstreamReport:
    status = pool.statuses.get(name)
    if status is None:
        return UpstreamReport(
            name=name,
            state=DISABLED,
            transport=transport_name(config.servers[name]),
            protocol_version=None,
            server_name=None,
            server_version=None,
            tool_count=0,
            tokens=None,
            direct_tokens=None,
            connect_seconds=None,
            attempts=0,
            last_error=None,
        )
    listed = bool(records) or status.healthy
    return UpstreamReport(
        name=name,
        state=status.state.value,
        transport=status.transport,
        protocol_version=status.protocol_version,
        server_name=status.server_name,
        server_version=status.server_version,
        tool_count=len(records),
        tokens=counter.count_tools(records, ToolFormat.MCP) if listed else None,
        direct_tokens=_direct_tokens(pool.listed.get(name, ()), counter) if listed else None,
        connect_seconds=status.connect_seconds,
        attempts=status.attempts,
        last_error=status.last_error,
    )


def _direct_tokens(listed: tuple[dict[str, Any], ...], counter: TokenCounter) -> int:
    return counter.count_text(serialise({"tools": list(listed)}))


def _full_listing(records: tuple[ToolRecord, ...], direct: int, counter: TokenCounter) -> Listing:
    tokens = {fmt.value: counter.count_tools(records, fmt) for fmt in ToolFormat}
    return Listing(
        f"all {len(records)} tools",
        len(records),
        tokens,
        dict.fromkeys(tokens, 0.0 if records else None),
        # Below zero only if the router's entries outweigh the upstreams' own (rare: the
        # qualified names are longer, but outputSchema is not relisted).
        _percent_saved(tokens[ToolFormat.MCP.value], direct),
    )


def _listing(
    label: str, tools: list[ToolRecord], full: Listing, direct: int, counter: TokenCounter
) -> Listing:
    tokens = {fmt.value: counter.count_tools(tools, fmt) for fmt in ToolFormat}
    return Listing(
        label,
        len(tools),
        tokens,
        _saved(tokens, full),
        _percent_saved(tokens[ToolFormat.MCP.value], direct),
        names=tuple(t.qualified_name for t in tools),
    )


def _typical(
    records: tuple[ToolRecord, ...],
    always: list[ToolRecord],
    k: int,
    full: Listing,
    direct: int,
    counter: TokenCounter,
) -> Listing:
    """Pins and meta-tools plus k tools of mean size: what a query-scoped listing costs
    on average, since which k tools a query brings varies."""
    picked = min(k, len(records))
    tokens = {}
    for fmt in ToolFormat:
        mean = counter.estimate_tools(records, fmt) / len(records) if records else 0.0
        tokens[fmt.value] = counter.count_tools(always, fmt) + round(mean * picked)
    return Listing(
        f"typical k={k} listing (mean tool size)",
        len(always) + picked,
        tokens,
        _saved(tokens, full),
        _percent_saved(tokens[ToolFormat.MCP.value], direct),
        approximate=True,
    )


def _saved(tokens: Mapping[str, int], full: Listing) -> dict[str, float | None]:
    return {
        fmt: _percent_saved(count, full.tokens[fmt]) if full.tools else None
        for fmt, count in tokens.items()
    }


def _percent_saved(count: int, against: int) -> float | None:
    return round(100.0 * (1 - count / against), 1) if against else None


def _upstream_json(u: UpstreamReport) -> dict[str, Any]:
    return {
        "name": u.name,
        "state": u.state,
        "transport": u.transport,
        "protocol_version": u.protocol_version,
        "server": {"name": u.server_name, "version": u.server_version},
        "tools": u.tool_count,
        "tokens": u.tokens,
        "direct_tokens": u.direct_tokens,
        "connect_seconds": None if u.connect_seconds is None else round(u.connect_seconds, 3),
        "attempts": u.attempts,
        "last_error": u.last_error,
    }


def _listing_json(listing: Listing) -> dict[str, Any]:
    out: dict[str, Any] = {
        "label": listing.label,
        "tools": listing.tools,
        "tokens": listing.tokens,
        "saved_percent": listing.saved_percent,
        "saved_percent_direct": listing.saved_percent_direct,
        "approximate": listing.approximate,
    }
    if listing.names:
        out["names"] = list(listing.names)
    return out


def _flag_json(flag: Flag) -> dict[str, Any]:
    return {
        "server": flag.server,
        "tool": flag.tool,
        "name": flag.qualified_name,
        "field": flag.field,
        "rule": flag.rule,
        "excerpt": flag.excerpt,
    }
