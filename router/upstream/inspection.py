"""What `mcp-router inspect` reports: each upstream's health, the extensions it offers and
the token bill of its tools.

Pure: it takes a `PoolSnapshot` (the pool as the command found it), so it is tested without
starting a server. Tokens are counted with `TokenCounter` (cl100k) on two forms:
- catalog form: the entries the router itself lists (qualified name, title, description,
  inputSchema, annotations), in each host format; the listings are compared on this form;
- direct: each upstream's own `tools/list` result as it sends it (outputSchema and all),
  what a host connected to the upstreams without the router pays (MCP format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

from router.accounting.formats import ToolFormat, serialise
from router.accounting.tokens import TokenCounter
from router.config import RouterConfig, name_rules
from router.core.apps import EXTENSION_ID as APPS
from router.core.catalog import Catalog, ToolRecord, ToolSpec
from router.core.meta_tools import meta_tool_records
from router.core.tool_patterns import resolve_pins
from router.policy.injection import scan_tools
from router.shaping.transforms import Transforms
from router.upstream.connection.transport import transport_name
from router.upstream.state import UpstreamState, UpstreamStatus

DISABLED = "disabled"


@dataclass(frozen=True, slots=True)
class PoolSnapshot:
    """The enabled upstreams at one moment: status, tools, and the raw listed tools."""

    statuses: Mapping[str, UpstreamStatus]
    tools: Mapping[str, tuple[ToolSpec, ...]]
    listed: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """Each upstream's `tools/list` entries as JSON (by alias, no nulls)."""


class _Report(BaseModel):
    """The report's parts: frozen, and laid out as the `--json` object they dump to
    (`model_dump(mode="json")`; the shape is documented in `router.cli.inspect`)."""

    model_config = ConfigDict(frozen=True)


class ServerInfo(_Report):
    """What the upstream called itself at initialisation."""

    name: str | None
    version: str | None


class UpstreamReport(_Report):
    name: str
    state: str
    """healthy | unhealthy | connecting | disabled."""
    transport: str
    protocol_version: str | None
    server: ServerInfo
    tools: int
    tokens: int | None
    """Its tools in catalog form, as one MCP `tools/list`; None when it never listed."""
    direct_tokens: int | None
    """Its own `tools/list` result as it sent it; None when it never listed."""
    connect_seconds: Annotated[
        float | None, PlainSerializer(lambda s: round(s, 3), when_used="unless-none")
    ]
    attempts: int
    last_error: str | None
    last_stderr: str | None
    """A stdio child's last stderr lines when `last_error` ended its connection."""
    extensions: tuple[str, ...] = ()
    """The extensions it declared (`capabilities.extensions` of its `initialize` or
    `server/discover` answer)."""
    undeclared_extensions: tuple[str, ...] = ()
    """Extensions its tools use that it did not declare: MCP Apps, when its tools carry
    `_meta.ui` (an SDK Apps server on a handshake revision declares none)."""

    @property
    def failing(self) -> bool:
        """Enabled and not serving: down, or still connecting when the snapshot was taken."""
        return self.state not in (UpstreamState.HEALTHY, DISABLED)


class Listing(_Report):
    """A tool list the host could be sent, priced in every format."""

    label: str
    tools: int
    tokens: dict[str, int]
    saved_percent: dict[str, float | None]
    """Against the full listing; None when there is nothing to save from."""
    saved_percent_direct: float | None = None
    """MCP tokens against the upstreams' direct listings together."""
    approximate: bool = False


class NamedListing(Listing):
    """A listing of known tools (the default one: pins and meta-tools), with their names."""

    names: tuple[str, ...]


class Listings(_Report):
    full: Listing
    default: NamedListing
    typical_k: Listing


class Totals(_Report):
    upstreams: int
    healthy: int
    tools: int
    tokens: dict[str, int]
    direct_tokens: int
    """What a host pays listing every upstream directly: one `tools/list` each."""


class FlagReport(_Report):
    """An `injection.Flag`, read from its attributes; its qualified name is `name` here."""

    model_config = ConfigDict(from_attributes=True)

    server: str
    tool: str | None
    name: str | None = Field(validation_alias="qualified_name")
    field: str
    rule: str
    excerpt: str


class HeldReport(_Report):
    """A tool that tool pinning would hold (`router.pinning`): its definition is not the
    approved one ("changed"), or it is new on a server seen before under strict ("new")."""

    server: str
    tool: str
    name: str
    reason: str


class InspectReport(_Report):
    config: str | None
    encoding: str
    k: int
    upstreams: tuple[UpstreamReport, ...]
    totals: Totals
    listings: Listings
    warnings: tuple[FlagReport, ...]
    held: tuple[HeldReport, ...] = ()
    transforms: tuple[str, ...] = ()
    """What the server entries' `tools` sections name that the upstreams lack
    (`router.shaping.transforms`)."""
    hosts: tuple[str, ...] = ()
    """Host files that serve this config in `"mode": "dynamic"` to a host that does not
    re-read its tools on `list_changed` (`router.hosts.refresh`; the CLI fills it in)."""
    served_extensions: tuple[str, ...] = ()
    """The extensions the router itself serves its hosts (the CLI fills it in from the
    server's own list); an upstream's other extensions are not carried to hosts."""


def build_report(
    config: RouterConfig,
    pool: PoolSnapshot,
    counter: TokenCounter,
    k: int,
    held: Callable[[Sequence[ToolRecord]], Mapping[tuple[str, str], str]] | None = None,
) -> InspectReport:
    """Price every upstream's tools and the listings the router would send instead.

    Servers of the config missing from `pool.statuses` are reported as disabled. `held`
    says which of the tools tool pinning would hold, by (server, tool), and why.
    """
    order = [name for name in config.servers if name in pool.statuses]
    transforms = Transforms.from_config(config)
    specs = transforms.apply(spec for name in order for spec in pool.tools.get(name, ()))
    catalog = Catalog.from_specs(specs, name_rules(config))
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
        totals=Totals(
            upstreams=len(upstreams),
            healthy=sum(u.state == "healthy" for u in upstreams),
            tools=full.tools,
            tokens=full.tokens,
            direct_tokens=direct,
        ),
        listings=Listings(
            full=full,
            default=default,
            typical_k=_typical(records, [*pinned, *meta], k, full, direct, counter),
        ),
        warnings=tuple(FlagReport.model_validate(flag) for flag in scan_tools(records)),
        held=_held(records, held),
        transforms=tuple(
            transforms.problems({name: pool.tools[name] for name in order if name in pool.tools})
        ),
    )


def _held(
    records: tuple[ToolRecord, ...],
    held: Callable[[Sequence[ToolRecord]], Mapping[tuple[str, str], str]] | None,
) -> tuple[HeldReport, ...]:
    reasons = held(records) if held is not None else {}
    return tuple(
        HeldReport(server=r.server, tool=r.called_as, name=r.qualified_name, reason=reasons[r.key])
        for r in records
        if r.key in reasons
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
            server=ServerInfo(name=None, version=None),
            tools=0,
            tokens=None,
            direct_tokens=None,
            connect_seconds=None,
            attempts=0,
            last_error=None,
            last_stderr=None,
        )
    listed = bool(records) or status.healthy
    apps = any(r.ui is not None for r in records)  # `_meta.ui`: MCP Apps, declared or not
    return UpstreamReport(
        name=name,
        state=status.state.value,
        transport=status.transport,
        protocol_version=status.protocol_version,
        server=ServerInfo(name=status.server_name, version=status.server_version),
        tools=len(records),
        tokens=counter.count_tools(records, ToolFormat.MCP) if listed else None,
        direct_tokens=_direct_tokens(pool.listed.get(name, ()), counter) if listed else None,
        connect_seconds=status.connect_seconds,
        attempts=status.attempts,
        last_error=status.last_error,
        last_stderr=status.last_stderr,
        extensions=status.extensions,
        undeclared_extensions=(APPS,) if apps and APPS not in status.extensions else (),
    )


def _direct_tokens(listed: tuple[dict[str, Any], ...], counter: TokenCounter) -> int:
    return counter.count_text(serialise({"tools": list(listed)}))


def _full_listing(records: tuple[ToolRecord, ...], direct: int, counter: TokenCounter) -> Listing:
    tokens = {fmt.value: counter.count_tools(records, fmt) for fmt in ToolFormat}
    return Listing(
        label=f"all {len(records)} tools",
        tools=len(records),
        tokens=tokens,
        saved_percent=dict.fromkeys(tokens, 0.0 if records else None),
        # Below zero only if the router's entries outweigh the upstreams' own (rare: the
        # qualified names are longer, but outputSchema is not relisted).
        saved_percent_direct=_percent_saved(tokens[ToolFormat.MCP.value], direct),
    )


def _listing(
    label: str, tools: list[ToolRecord], full: Listing, direct: int, counter: TokenCounter
) -> NamedListing:
    tokens = {fmt.value: counter.count_tools(tools, fmt) for fmt in ToolFormat}
    return NamedListing(
        label=label,
        tools=len(tools),
        tokens=tokens,
        saved_percent=_saved(tokens, full),
        saved_percent_direct=_percent_saved(tokens[ToolFormat.MCP.value], direct),
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
        label=f"typical k={k} listing (mean tool size)",
        tools=len(always) + picked,
        tokens=tokens,
        saved_percent=_saved(tokens, full),
        saved_percent_direct=_percent_saved(tokens[ToolFormat.MCP.value], direct),
        approximate=True,
    )


def _saved(tokens: Mapping[str, int], full: Listing) -> dict[str, float | None]:
    return {
        fmt: _percent_saved(count, full.tokens[fmt]) if full.tools else None
        for fmt, count in tokens.items()
    }


def _percent_saved(count: int, against: int) -> float | None:
    return round(100.0 * (1 - count / against), 1) if against else None
