"""The `mcpServers` entries: a local server started as a child process (`StdioServer`) or
one reached over HTTP (`RemoteServer`), told apart by `command` or `url`, with the timeouts
each upstream runs with and the keys other hosts write into an entry."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PositiveFloat,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from router.config.defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_STOP,
    DEFAULT_PING_INTERVAL,
)
from router.config.fields import ExpandedText, Pattern
from router.config.oauth import OAuthSettings
from router.config.shaping import TaskMode, ToolTransform, check_transforms
from router.sdk.versions import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

__all__ = [
    "FOREIGN_KEYS",
    "KIND_MODELS",
    "SERVER_KINDS",
    "EffectiveTimeouts",
    "RemoteServer",
    "ServerConfig",
    "Start",
    "StdioServer",
    "Timeouts",
    "server_kind",
]

# Keys other hosts write into a server entry; accepted without a warning.
FOREIGN_KEYS = frozenset(
    {
        "type",
        "autoApprove",
        "alwaysAllow",
        "timeout",
        "transportType",
        "envFile",
        "enabled",
        "name",
        "icon",
        "notes",
        "oauth",  # a stdio entry's; a remote entry's is `RemoteServer.oauth`
        "trust",  # Gemini CLI
        "authProviderType",
        "dev",  # VS Code
        "watchPaths",  # Roo Code
        "startup_timeout_sec",  # Codex
        "startup_timeout_ms",
        "tool_timeout_sec",
        "bearer_token_env_var",
        "env_vars",
    }
)
SERVER_KINDS = ("stdio", "remote")

Start = Literal["auto", "eager", "lazy"]
"""When an upstream starts: `eager` with the router, and it keeps running; `lazy` at the first
call that needs it, its tools searched from its listing in the cache folder until then (a
server never listed before starts at once, to learn its tools), and stopped again after
`timeouts.idle` without calls; `auto`: lazy for a local (stdio) server, eager for a remote one
(connecting costs it little)."""


class Timeouts(BaseModel):
    """Seconds to wait; unset values fall back to the `router.timeouts` defaults."""

    model_config = ConfigDict(extra="forbid")

    connect: PositiveFloat | None = None
    call: PositiveFloat | None = None
    """Seconds a call may go without an answer, or, while the upstream reports progress,
    without a progress notification: each one starts the wait again, up to `call_max`."""
    call_max: PositiveFloat | None = None
    """Seconds a call may take in all, however much progress it reports (default: ten times
    `call`)."""
    ping: PositiveFloat | None = None
    """Remote upstreams: seconds between liveness pings (not a wait; stdio needs none)."""
    idle: PositiveFloat | None = None
    """Lazy upstreams: seconds without a call after which the server is stopped again."""


class EffectiveTimeouts(BaseModel):
    """The timeouts one upstream runs with, defaults applied."""

    model_config = ConfigDict(frozen=True)

    connect: float = DEFAULT_CONNECT_TIMEOUT
    call: float = DEFAULT_CALL_TIMEOUT
    call_max: float | None = None
    """None: ten times `call` (`total_call_limit`)."""
    ping: float = DEFAULT_PING_INTERVAL
    idle: float = DEFAULT_IDLE_STOP

    @property
    def total_call_limit(self) -> float:
        """The most seconds one call may take, progress or not (at least `call`)."""
        return max(self.call, self.call_max if self.call_max is not None else 10 * self.call)


def _check_protocol(value: str) -> str:
    allowed = ("auto", "legacy", *HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
    if value not in allowed:
        raise PydanticCustomError(
            "protocol_setting",
            "unknown protocol setting '{value}'; use one of {allowed}",
            {"value": value, "allowed": ", ".join(allowed)},
        )
    return value


class _ServerBase(BaseModel):
    """Settings every upstream entry shares; unknown keys from other hosts are kept, unused."""

    model_config = ConfigDict(extra="allow")

    disabled: bool = False
    description: str | None = None
    """What the server is for, in the user's words ("our team's knowledge base"): joined to
    what the server says about itself, it places the server as a whole in search
    (`router.retrieval.server_signal`) and names it in an answer that nothing fits."""
    protocol: Annotated[str, AfterValidator(_check_protocol)] = "auto"
    """`auto` probes `server/discover` once and remembers the answer; `legacy` always uses the
    `initialize` handshake (no probe); a modern version such as `2026-07-28` skips the probe."""
    timeouts: Timeouts = Field(default_factory=Timeouts)
    include: list[Pattern] = Field(default_factory=list)
    exclude: list[Pattern] = Field(default_factory=list)
    prefix: bool = True
    """`false` keeps the upstream's tool names unprefixed (`get_current_time`, not
    `time__get_current_time`); two servers listing the same unprefixed name is a config error."""
    result_tokens: int | None = Field(default=None, ge=0)
    """This server's own `router.limits.result_tokens` (0: no limit for its results)."""
    confirm_destructive: bool = False
    """Ask the user before every call to a tool annotated `destructiveHint: true`."""
    tasks: TaskMode | None = None
    """Whether this server's calls run as tasks for a host that declared the tasks extension
    (`TaskSettings`); unset: `router.tasks.mode`. A transform's `tasks` wins."""
    start: Start | None = None
    """This server's own `router.start` (`Start`)."""
    tools: Annotated[dict[Pattern, ToolTransform], AfterValidator(check_transforms)] = Field(
        default_factory=dict
    )
    """Transforms of the upstream's tools, keyed by its tool names or globs
    (`router/config/shaping.py`): applied live, without restarting the upstream."""

    @property
    def connect_mode(self) -> str:
        """The protocol setting as the SDK `Client(mode=...)` spells it."""
        return "legacy" if self.protocol in HANDSHAKE_PROTOCOL_VERSIONS else self.protocol


class TaskSettings(BaseModel):
    """The `router.tasks` section: how this router runs long calls as tasks for hosts that
    declare the 2026-07-28 tasks extension (docs/tasks.md), and the bounds on what it keeps
    of them. A server entry's `tasks` and its transforms' set the mode per tool."""

    model_config = ConfigDict(extra="forbid")

    mode: TaskMode = "auto"
    """The mode of a tool whose server entry and transforms say none."""
    after_ms: int = Field(default=2000, ge=0)
    """In `auto` mode: a call still running this long becomes a task."""
    ttl_s: float = Field(default=3600, gt=0)
    """A task is kept this long from its creation, result included; a call still running
    then is cancelled, and the task is forgotten (seconds; a fraction is allowed)."""
    poll_ms: int = Field(default=1000, ge=1)
    """The `pollIntervalMs` hosts are told."""
    max_tasks: int = Field(default=1024, ge=1)
    """Tasks this router keeps at once, running or holding a result; past it the oldest
    finished one is forgotten, and with none finished a new task is refused."""
    per_principal: int = Field(default=32, ge=1)
    """Tasks one principal may have running at once (with identities; without them every
    caller is one principal)."""
    result_bytes: int = Field(default=4 << 20, ge=1024)
    """The largest result a task keeps (as JSON, after the server's token limit): a larger
    one fails the task, saying so."""


class StdioServer(_ServerBase):
    """A local server started as a child process speaking MCP on stdin/stdout."""

    command: Annotated[str, Field(min_length=1)]
    args: list[ExpandedText] = Field(default_factory=list)
    env: dict[str, ExpandedText] = Field(default_factory=dict)
    cwd: Path | None = None


class RemoteServer(_ServerBase):
    """A server reached over HTTP (streamable HTTP, or legacy SSE)."""

    url: str
    transport: Literal["streamable-http", "sse"] | None = None
    # repr=False: header values are credentials; a logged model must not show them.
    headers: dict[str, ExpandedText] = Field(default_factory=dict, repr=False)
    oauth: OAuthSettings | None = None
    """How to sign in when the server asks (`router/config/oauth.py`); without it the router
    still signs in on a 401, registering itself."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PydanticCustomError(
                "url_scheme", "'{value}' is not an http(s) URL", {"value": value}
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _transport_from_type(cls, data: Any) -> Any:
        """Cursor and Claude Code spell the transport `type: "http" | "sse"`."""
        if isinstance(data, dict) and "transport" not in data:
            kind = data.get("type")
            if kind in ("http", "streamable-http", "streamableHttp", "streamable_http"):
                return {**data, "transport": "streamable-http"}
            if kind == "sse":
                return {**data, "transport": "sse"}
        return data

    @property
    def effective_transport(self) -> Literal["streamable-http", "sse"]:
        """The configured transport, else `sse` for a path ending in `/sse`."""
        if self.transport is not None:
            return self.transport
        path = urlsplit(self.url).path.rstrip("/")
        return "sse" if path.endswith("/sse") else "streamable-http"


def server_kind(value: Any) -> str | None:
    if isinstance(value, Mapping):
        if "command" in value:
            return "stdio"
        if "url" in value:
            return "remote"
    if isinstance(value, StdioServer):
        return "stdio"
    if isinstance(value, RemoteServer):
        return "remote"
    return None


KIND_MODELS: dict[str, tuple[type[_ServerBase], ...]] = {
    "stdio": (StdioServer,),
    "remote": (RemoteServer,),
}

ServerConfig = Annotated[
    Annotated[StdioServer, Tag("stdio")] | Annotated[RemoteServer, Tag("remote")],
    Discriminator(
        server_kind,
        custom_error_type="server_kind",
        custom_error_message="the entry has neither `command` nor `url`",
    ),
]
