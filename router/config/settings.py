"""The `router` section (`RouterSettings` and its parts: `http`, `limits`, `store`,
`policy`) and the whole file (`RouterConfig`), with the effective per-server values the
two give together."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PositiveFloat,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from router.config.audit import AuditSettings
from router.config.code import CodeSettings
from router.config.defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_HTTP_PORT,
    DEFAULT_IDLE_STOP,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_NAME_LINE_CHARS,
    DEFAULT_NAMES_AFTER_K,
    DEFAULT_PING_INTERVAL,
    DEFAULT_RESULT_TOKENS,
    DEFAULT_SUMMARY_TOKENS,
)
from router.config.fields import ExpandedText, Pattern
from router.config.identity import DEFAULT_PROFILE, FrontOAuth, Operators, Profile
from router.config.oauth import OAuthSettings
from router.config.personal import PersonalSettings, SecretsKey
from router.config.quotas import Quota
from router.config.servers import (
    EffectiveTimeouts,
    RemoteServer,
    ServerConfig,
    Start,
    StdioServer,
    TaskSettings,
    Timeouts,
)
from router.config.shaping import Endpoint, EndpointName
from router.core.errors import ConfigError

__all__ = [
    "HttpSettings",
    "Limits",
    "Policy",
    "RouterConfig",
    "RouterSettings",
    "StoreSettings",
]


class HttpSettings(BaseModel):
    """The `router.http` section: the HTTP front of `serve --http` (CLI flags override)."""

    model_config = ConfigDict(extra="forbid")

    host: Annotated[str, Field(min_length=1)] = "127.0.0.1"
    port: int = Field(default=DEFAULT_HTTP_PORT, ge=0, le=65535)
    allowed_hosts: list[Pattern] = Field(default_factory=list)
    """Host header values accepted besides the loopback names: `name`, `name:port`,
    `name:*` (any port) or `*` (any host)."""
    allowed_origins: list[Pattern] = Field(default_factory=list)
    """Origin header values accepted besides loopback origins: `https://app.example`,
    `http://name:*` (any port) or `*`. Requests without an Origin (non-browser) pass."""
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1)
    """Larger request bodies are refused with 413."""
    oauth: FrontOAuth | None = None
    """Identities: the front as an OAuth 2.1 resource server (`router.config.identity`),
    instead of the one shared `ROUTER_TOKEN`."""


class Limits(BaseModel):
    """The `router.limits` section: what a tool result may cost the model's context."""

    model_config = ConfigDict(extra="forbid")

    result_tokens: int = Field(default=DEFAULT_RESULT_TOKENS, ge=0)
    """Results longer than this many tokens are cut (0: no limit). The default is the limit
    Claude Code applies to MCP tool output."""
    keep_seconds: float = Field(default=900.0, ge=0)
    """How long a cut tool result's text is kept for `read_result` (0: not kept)."""
    keep_mib: float = Field(default=64.0, ge=0)
    """The memory all kept results share, in MiB; the oldest go first to make room."""


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", "@", 1)).geturl()


def _store_url(value: Any) -> Any:
    """`router.store` may be just the URL: `"postgresql://..."`."""
    return {"url": value} if isinstance(value, str) else value


class StoreSettings(BaseModel):
    """The `router.store` section: a shared PostgreSQL (with pgvector) that holds the tool
    vectors and their HNSW index, so replicas embed nothing another already embedded."""

    model_config = ConfigDict(extra="forbid")

    url: ExpandedText = Field(repr=False)
    """`postgresql://user:${PGPASSWORD}@host:5432/db` (libpq's URL form; `${VAR}` expands)."""
    namespace: Annotated[str, Field(min_length=1, max_length=200)] = "default"
    """Replicas that share a namespace share one index; another namespace is another catalog."""
    search: Literal["auto", "exact", "hnsw"] = "auto"
    """`exact`: each replica reads the vectors into memory and scans them all; `hnsw`: the
    database's approximate index answers, no vectors held; `auto`: exact up to
    `exact_max_tools` tools, HNSW above."""
    exact_max_tools: int | None = Field(default=None, ge=0)
    """The most tools `auto` scans exactly. None: the store's tuned default
    (`DEFAULT_EXACT_MAX_TOOLS` in `router/store/postgres/tuning.py`)."""
    ef_search: int | None = Field(default=None, ge=1, le=1000)
    """pgvector's `hnsw.ef_search`: higher finds more of the exact top, slower (at least the
    100 candidates that fusion reads are always asked for). None: the store's tuned default
    (`DEFAULT_EF_SEARCH` in `router/store/postgres/tuning.py`)."""
    connect_timeout: PositiveFloat = 10.0
    """Seconds to reach the store at start (an unreachable store stops the router then)."""

    @field_validator("exact_max_tools", "ef_search", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        # None stands for the store's default only when the key is left out: a written
        # null is refused as it always was.
        if value is None:
            raise PydanticCustomError("int_type", "Input should be a valid integer")
        return value

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, url: str) -> str:
        if urlsplit(url).scheme not in ("postgresql", "postgres"):
            raise PydanticCustomError(
                "store_url",
                "'{url}' is not a PostgreSQL URL; use postgresql://user@host:5432/database",
                {"url": _without_password(url)},
            )
        return url


Store = Annotated[StoreSettings, BeforeValidator(_store_url)]


class Policy(BaseModel):
    """The `router.policy` section: which tools may be called, and which ask first.

    Each entry is a `server/tool` glob (as in `pin`) or a qualified name. `deny` wins over
    everything; a tool matched by `confirm` asks the user through elicitation before each call;
    a non-empty `allow` makes every tool it does not match denied."""

    model_config = ConfigDict(extra="forbid")

    allow: list[Pattern] = Field(default_factory=list)
    deny: list[Pattern] = Field(default_factory=list)
    confirm: list[Pattern] = Field(default_factory=list)
    hold_flagged: bool = False
    """Deny every tool whose text reads like instructions to the model (the heuristics of
    `router/policy/injection.py`); off, such a tool is only marked in search results."""


class RouterSettings(BaseModel):
    """The `router` section: how the routed server behaves."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=5, ge=1, le=100)
    names_after_k: int = Field(default=DEFAULT_NAMES_AFTER_K, ge=0, le=50)
    """How many tools past the top k a `search_tools` answer names, each on one line (its
    name and the start of its description) without its schema: a model that sees the tool
    it meant there asks for it by name (benchmarks/names_beyond.py chose the default); 0
    names none."""
    name_line_chars: int = Field(default=DEFAULT_NAME_LINE_CHARS, ge=20, le=300)
    """The most characters of description on each of those lines."""
    servers_summary_tokens: int = Field(default=DEFAULT_SUMMARY_TOKENS, ge=0, le=2000)
    """The token budget (cl100k) of the servers' directory that the `initialize`
    instructions and `search_tools`' description carry: each server's name, tool count and
    what it is for (its `description`, else its own words, else its first tools' names),
    shortened alike to fit (`router.server.listing.directory`); 0 leaves it out."""
    pin: list[Pattern] = Field(default_factory=list)
    """Tools always listed: qualified names (`time__get_current_time`) or `server/tool` globs."""
    mode: Literal["search", "dynamic", "all", "code"] = "search"
    """`search` lists pins and the meta-tools; `dynamic` adds each session's last search;
    `all` lists every tool (pass-through, for small setups and transparency checks); `code`
    lists pins, `search_tools` and `execute`, which runs a program over the tools."""
    always_load: bool = True
    """Mark the router's own tools and the pinned ones `_meta["anthropic/alwaysLoad"]`, so a
    host that defers MCP tools behind its own tool search keeps these loaded (a search to
    find the search is one round trip too many); false leaves the host to decide. Read at
    start."""
    model: Annotated[str, Field(min_length=1)] = "minilm-l6-tools"
    cache_dir: Path | None = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    disabled: list[str] = Field(default_factory=list)
    include: list[Pattern] = Field(default_factory=list)
    exclude: list[Pattern] = Field(default_factory=list)
    http: HttpSettings = Field(default_factory=HttpSettings)
    steps: bool = True
    """Rank each step clause of a multi-step request too ("find X, then do Y"): better at
    requests that need several tools, one more query embedding per clause; false ranks the
    request whole."""
    quotas: dict[str, Quota] = Field(default_factory=dict)
    """How much each principal may use (`router.config.quotas`), by profile name, with
    `default` for everyone else; `calls_per_minute` shared by every replica of a store."""
    audit: AuditSettings | None = None
    """The audit trail (`router.config.audit`); unset: none is kept."""
    secrets_key: SecretsKey | None = None
    """Where the key that encrypts per-user credentials comes from (`router.config.personal`)."""
    personal: PersonalSettings = Field(default_factory=PersonalSettings)
    """Bounds on per-principal upstream connections (`router.config.personal`)."""
    rerank: bool = False
    """Re-score each search's first tools with the shipped cross-encoder
    (`router.retrieval.rerank`; N and its weight were chosen on the dev halves). Off by
    default: it costs a model run per candidate (`benchmarks/README.md`, "Reranker" gives the
    measured gain and cost). Read at start."""
    pinning: Literal["off", "changes", "strict"] = "changes"
    """Tool pinning (`router/pinning/`): each tool's definition is recorded when first seen
    and a changed one is held until approved (`mcp-router tools approve`). `strict` also holds
    a new tool of a server seen before; `off` records and holds nothing."""
    learn: bool | None = None
    """Usage feedback: tools called after a search rise for similar queries later. The pairs
    stay in `usage.sqlite3` in the cache folder; nothing leaves the machine. Unset: on for
    one host (stdio), off on the shared HTTP front, where one client's calls would steer
    every other client's ranking; `true` turns it on there too."""
    limits: Limits = Field(default_factory=Limits)
    policy: Policy = Field(default_factory=Policy)
    profiles: dict[str, Profile] = Field(default_factory=dict)
    """What each principal may list, search and call (`router.config.identity`)."""
    operators: Operators = Field(default_factory=Operators)
    """Who may approve held tools in a session and read `/metrics` and the detailed
    `/healthz` (`router.config.identity.Operators`); none by default."""
    code: CodeSettings = Field(default_factory=CodeSettings)
    """Code mode's limits per run and its sandbox workers (`router.config.code`)."""
    tasks: TaskSettings = Field(default_factory=TaskSettings)
    """Long calls as tasks for hosts that declare the tasks extension (`TaskSettings`)."""
    store: Store | None = None
    """A shared PostgreSQL store (`StoreSettings`); unset: the embedded SQLite cache in
    `cache_dir` and in-process exact search, which a single user needs nothing more than."""
    endpoints: dict[EndpointName, Endpoint] = Field(default_factory=dict)
    """Named views, each served at `/mcp/NAME` and `/sse/NAME` (`serve --endpoint NAME` on
    stdio) with its own servers, tools, mode, k, pins and policy (`router.config.shaping`)."""
    start: Start = "auto"
    """When upstreams start (`Start`); a server entry's own `start` wins."""
    reload: Literal["watch", "signal", "off"] = "watch"
    """While serving, apply the edited config file without a restart (`router/config/diff.py`
    says what applies live): `watch` when the file changes and on SIGHUP, `signal` on SIGHUP
    only, `off` never."""

    @model_validator(mode="after")
    def _quotas_name_profiles(self) -> RouterSettings:
        for name in self.quotas:
            if name != DEFAULT_PROFILE and name not in self.profiles:
                known = ", ".join(sorted([DEFAULT_PROFILE, *self.profiles]))
                raise ConfigError(
                    f"router.quotas.{name}: '{name}' is not a profile in router.profiles "
                    f"(known: {known}). Fix: name a profile, or use '{DEFAULT_PROFILE}'."
                )
        return self

    @field_validator("profiles")
    @classmethod
    def _profiles_match_someone(cls, profiles: dict[str, Profile]) -> dict[str, Profile]:
        for name, profile in profiles.items():
            if name != DEFAULT_PROFILE and not (profile.subjects or profile.groups):
                raise PydanticCustomError(
                    "profile_matches_no_one",
                    "profile '{name}' names no subjects and no groups, so it applies to no "
                    "one; add some, or call it '{default}' to make it everyone else's",
                    {"name": name, "default": DEFAULT_PROFILE},
                )
        return profiles


class RouterConfig(BaseModel):
    """A whole configuration file; other top-level keys (a host's own settings) are ignored."""

    model_config = ConfigDict(extra="ignore")

    servers: dict[str, ServerConfig] = Field(
        validation_alias=AliasChoices("mcpServers", "mcp_servers", "servers")
    )
    router: RouterSettings = Field(default_factory=RouterSettings)
    source: Path | None = Field(default=None, exclude=True)
    """The file this was loaded from, if any."""

    @field_validator("servers")
    @classmethod
    def _server_names(cls, servers: dict[str, Any]) -> dict[str, Any]:
        for name in servers:
            if not name.strip() or "/" in name or any(ch.isspace() for ch in name):
                raise PydanticCustomError(
                    "server_name",
                    "server name '{name}' must be non-empty, without '/' or spaces",
                    {"name": name},
                )
        return servers

    @model_validator(mode="after")
    def _disabled_names_exist(self) -> RouterConfig:
        for index, name in enumerate(self.router.disabled):
            if name not in self.servers:
                known = ", ".join(sorted(self.servers)) or "none"
                raise ConfigError(
                    f"router.disabled[{index}]: '{name}' is not a server in mcpServers "
                    f"(known: {known}). Fix: correct the name or remove it."
                )
        return self

    @model_validator(mode="after")
    def _personal_needs_identities(self) -> RouterConfig:
        for name, server in self.servers.items():
            oauth = getattr(server, "oauth", None)
            if not isinstance(oauth, OAuthSettings) or not oauth.personal:
                continue
            field = "perUser" if oauth.per_user else "grant"
            if self.router.http.oauth is None:
                raise ConfigError(
                    f"mcpServers.{name}.oauth.{field}: a sign-in per user needs identities at "
                    "the front, and none are configured. Fix: set router.http.oauth (and serve "
                    "with --http), or remove the setting to sign in once for everyone."
                )
            if self.router.store is not None and self.router.secrets_key is None:
                raise ConfigError(
                    f"mcpServers.{name}.oauth.{field}: with router.store every replica must "
                    "decrypt the same credentials, and router.secrets_key is not set. Fix: "
                    'set router.secrets_key to {"env": "VAR"} or {"file": "PATH"}.'
                )
        return self

    @model_validator(mode="after")
    def _endpoints_name_servers(self) -> RouterConfig:
        for name, endpoint in self.router.endpoints.items():
            for index, server in enumerate(endpoint.servers):
                if server not in self.servers:
                    known = ", ".join(sorted(self.servers)) or "none"
                    raise ConfigError(
                        f"router.endpoints.{name}.servers[{index}]: '{server}' is not a "
                        f"server in mcpServers (known: {known}). Fix: correct the name or "
                        "remove it."
                    )
        return self

    @property
    def modes(self) -> frozenset[str]:
        """Every mode something is served in: the router's and its endpoints'."""
        own = {e.mode for e in self.router.endpoints.values() if e.mode is not None}
        return frozenset({self.router.mode, *own})

    def enabled_servers(self) -> dict[str, StdioServer | RemoteServer]:
        """Servers to start: all less `router.disabled` and entries with `disabled: true`."""
        off = set(self.router.disabled)
        return {
            name: server
            for name, server in self.servers.items()
            if name not in off and not server.disabled
        }

    def result_tokens_for(self, name: str) -> int:
        """The server's own `result_tokens`, else `router.limits.result_tokens` (0: no limit)."""
        own = self.servers[name].result_tokens
        return self.router.limits.result_tokens if own is None else own

    def timeouts_for(self, name: str) -> EffectiveTimeouts:
        """The server's own timeouts, else `router.timeouts`, else the built-in defaults."""
        own = self.servers[name].timeouts
        default = self.router.timeouts
        return EffectiveTimeouts(
            connect=own.connect or default.connect or DEFAULT_CONNECT_TIMEOUT,
            call=own.call or default.call or DEFAULT_CALL_TIMEOUT,
            call_max=own.call_max or default.call_max,
            ping=own.ping or default.ping or DEFAULT_PING_INTERVAL,
            idle=own.idle or default.idle or DEFAULT_IDLE_STOP,
        )

    def start_for(self, name: str) -> Start:
        """The server's own `start`, else `router.start`."""
        return self.servers[name].start or self.router.start
