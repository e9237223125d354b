"""The configuration file: Claude Desktop's `mcpServers` shape plus a `router` section.

A Claude Desktop or Cursor file loads as it is; per-upstream router settings (`protocol`,
`timeouts`, `include`, `exclude`, `disabled`) may be added to any server entry, and keys
that other hosts put there (`autoApprove`, `type`, ...) are tolerated; one that looks like
a misspelled router key (`comand`, `exlude`) is an error naming the key meant. Every error
is a `ConfigError` naming the file, the field path and the fix. Relative paths in `cwd`,
`cache_dir` and `command` (one with a `/`, such as `../venv/bin/server`) are relative to the
config file; a bare command name is looked up on PATH.

```json
{"mcpServers": {
   "time": {"command": "mcp-server-time"},
   "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}},
 "router": {"k": 5, "pin": ["time/*"], "timeouts": {"connect": 20, "call": 60}}}
```
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PositiveFloat,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from router.errors import ConfigError
from router.sdk.versions import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "EffectiveTimeouts",
    "HttpSettings",
    "RemoteServer",
    "RouterConfig",
    "RouterSettings",
    "ServerConfig",
    "StdioServer",
    "StoreSettings",
    "Timeouts",
    "load_config",
    "parse_config",
]

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds from spawn to a listed tool set; a cold `npx` spends much of it downloading."""
DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_PING_INTERVAL = 15.0
"""Seconds between liveness pings of a remote upstream: an idle streamable-HTTP connection
does not notice when its server goes away."""
DEFAULT_HTTP_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_RESULT_TOKENS = 25_000
DEFAULT_EXACT_MAX_TOOLS = 60_000
"""`router.store.search: auto` scans in-process up to this many tools, HNSW above: where
pgvector's HNSW starts to answer the hybrid search faster than the exact scan
(`recommendation` in benchmarks/results/store_scale.json; tests/test_store_scale_quick.py
keeps the two equal)."""
DEFAULT_EF_SEARCH = 400
"""The fastest setting within 0.01 Recall@5 of exact search (upper bound of its 95% interval)
at every size measured. pgvector builds the graph in parallel, so its recall varies between
builds: in an earlier run 100 passed too; in the committed one only 400 did at 250k tools."""

logger = logging.getLogger(__name__)

# Keys other hosts write into a server entry; accepted without a warning.
_FOREIGN_KEYS = frozenset(
    {
        "type",
        "autoApprove",
        "alwaysAllow",
        "timeout",
        "description",
        "transportType",
        "envFile",
        "enabled",
        "name",
        "icon",
        "notes",
        "oauth",
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
# Other hosts' names for what the router reads under another name; ignoring one would
# quietly change what is served (a tool filter or credentials dropped), so each is an error
# that names the router's key.
_OTHER_SPELLINGS = {
    "serverUrl": "url",  # Windsurf
    "httpUrl": "url",  # Gemini CLI
    "http_headers": "headers",  # Codex
    "includeTools": "include",  # Gemini CLI
    "excludeTools": "exclude",
    "enabled_tools": "include",  # Codex
    "disabled_tools": "exclude",
    "disabledTools": "exclude",  # Roo Code, Windsurf
}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SERVER_KINDS = ("stdio", "remote")


def _scalar_to_str(value: Any) -> Any:
    """`"PORT": 3000` in env or args is common in hand-written files: read it as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _expand_vars(value: str, info: ValidationInfo) -> str:
    """Replace `${VAR}` / `${VAR:-default}` from the environment given as context."""
    context = info.context if isinstance(info.context, Mapping) else {}
    environ: Mapping[str, str] = context.get("environ", os.environ)

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise PydanticCustomError(
            "env_var_missing",
            "environment variable {var} is not set",
            {"var": name},
        )

    return _VAR.sub(substitute, value)


Text = Annotated[str, BeforeValidator(_scalar_to_str)]
ExpandedText = Annotated[str, BeforeValidator(_scalar_to_str), AfterValidator(_expand_vars)]
Pattern = Annotated[str, Field(min_length=1)]


class Timeouts(BaseModel):
    """Seconds to wait; unset values fall back to the `router.timeouts` defaults."""

    model_config = ConfigDict(extra="forbid")

    connect: PositiveFloat | None = None
    call: PositiveFloat | None = None
    ping: PositiveFloat | None = None
    """Remote upstreams: seconds between liveness pings (not a wait; stdio needs none)."""


class EffectiveTimeouts(BaseModel):
    """The timeouts one upstream runs with, defaults applied."""

    model_config = ConfigDict(frozen=True)

    connect: float = DEFAULT_CONNECT_TIMEOUT
    call: float = DEFAULT_CALL_TIMEOUT
    ping: float = DEFAULT_PING_INTERVAL


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

    @property
    def connect_mode(self) -> str:
        """The protocol setting as the SDK `Client(mode=...)` spells it."""
        return "legacy" if self.protocol in HANDSHAKE_PROTOCOL_VERSIONS else self.protocol


class StdioServer(_ServerBase):
    """A local server started as a child process speaking MCP on stdin/stdout."""

    command: Annotated[str, Field(min_length=1)]
    args: list[Text] = Field(default_factory=list)
    env: dict[str, ExpandedText] = Field(default_factory=dict)
    cwd: Path | None = None


class RemoteServer(_ServerBase):
    """A server reached over HTTP (streamable HTTP, or legacy SSE)."""

    url: str
    transport: Literal["streamable-http", "sse"] | None = None
    # repr=False: header values are credentials; a logged model must not show them.
    headers: dict[str, ExpandedText] = Field(default_factory=dict, repr=False)

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


def _server_kind(value: Any) -> str | None:
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


_KIND_MODELS: dict[str, tuple[type[_ServerBase], ...]] = {
    "stdio": (StdioServer,),
    "remote": (RemoteServer,),
}

ServerConfig = Annotated[
    Annotated[StdioServer, Tag("stdio")] | Annotated[RemoteServer, Tag("remote")],
    Discriminator(
        _server_kind,
        custom_error_type="server_kind",
        custom_error_message="the entry has neither `command` nor `url`",
    ),
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


class Limits(BaseModel):
    """The `router.limits` section: what a tool result may cost the model's context."""

    model_config = ConfigDict(extra="forbid")

    result_tokens: int = Field(default=DEFAULT_RESULT_TOKENS, ge=0)
    """Results longer than this many tokens are cut (0: no limit). The default is the limit
    Claude Code applies to MCP tool output."""


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
    exact_max_tools: int = Field(default=DEFAULT_EXACT_MAX_TOOLS, ge=0)
    ef_search: int = Field(default=DEFAULT_EF_SEARCH, ge=1, le=1000)
    """pgvector's `hnsw.ef_search`: higher finds more of the exact top, slower (at least the
    100 candidates that fusion reads are always asked for)."""
    connect_timeout: PositiveFloat = 10.0
    """Seconds to reach the store at start (an unreachable store stops the router then)."""

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


class RouterSettings(BaseModel):
    """The `router` section: how the routed server behaves."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=5, ge=1, le=100)
    pin: list[Pattern] = Field(default_factory=list)
    """Tools always listed: qualified names (`time__get_current_time`) or `server/tool` globs."""
    mode: Literal["search", "dynamic", "all"] = "search"
    """`search` lists pins and the meta-tools; `dynamic` adds each session's last search;
    `all` lists every tool (pass-through, for small setups and transparency checks)."""
    model: Annotated[str, Field(min_length=1)] = "all-MiniLM-L6-v2"
    cache_dir: Path | None = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    disabled: list[str] = Field(default_factory=list)
    include: list[Pattern] = Field(default_factory=list)
    exclude: list[Pattern] = Field(default_factory=list)
    http: HttpSettings = Field(default_factory=HttpSettings)
    steps: bool = False
    """Rank each step clause of a multi-step request too ("find X, then do Y"): better at
    requests that need several tools, one more query embedding per clause."""
    learn: bool = True
    """Usage feedback: tools called after a search rise for similar queries later. The pairs
    stay in `usage.sqlite3` in the cache folder; nothing leaves the machine."""
    limits: Limits = Field(default_factory=Limits)
    policy: Policy = Field(default_factory=Policy)
    store: Store | None = None
    """A shared PostgreSQL store (`StoreSettings`); unset: the embedded SQLite cache in
    `cache_dir` and in-process exact search, which a single user needs nothing more than."""


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
            ping=own.ping or default.ping or DEFAULT_PING_INTERVAL,
        )


def parse_config(
    data: Any,
    *,
    source: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> RouterConfig:
    """Validate already-parsed config data.

    Args:
        data: The decoded JSON or TOML document.
        source: The file it came from: named in errors, and the base of relative paths.
        environ: Variables for `${VAR}` expansion; defaults to `os.environ`.

    Raises:
        ConfigError: The data is not a valid configuration.
    """
    where = str(source) if source is not None else "<config>"
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{where}: the top level is not an object. "
            'Fix: write {"mcpServers": {"name": {"command": ...}}}.'
        )
    context = {"environ": os.environ if environ is None else environ}
    misspelled = _misspelled_server_keys(where, data)
    typos = [line for lines in misspelled.values() for line in lines]
    try:
        config = RouterConfig.model_validate(data, context=context)
    except ValidationError as exc:
        # A kindless entry with a misspelled `command` or `url`: the typo says it all.
        rest = [
            _describe(where, error)
            for error in exc.errors()
            if not (error["type"] == "server_kind" and error["loc"][1] in misspelled)
        ]
        raise ConfigError("\n".join([*typos, *rest])) from None
    except ConfigError as exc:
        raise ConfigError("\n".join([*typos, f"{where}: {exc}"])) from None
    if typos:
        raise ConfigError("\n".join(typos))
    for name, server in config.servers.items():
        unknown = sorted(set(server.model_extra or {}) - _FOREIGN_KEYS)
        if unknown:
            logger.warning("%s: mcpServers.%s: ignoring unknown keys %s", where, name, unknown)
    base = Path(source).parent if source is not None else Path.cwd()
    return _resolve_paths(config, base, Path(source) if source is not None else None)


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> RouterConfig:
    """Read a JSON or TOML configuration file (a Claude Desktop file works as it is).

    Raises:
        ConfigError: The file is missing, unparseable or invalid; the message names the
            file, the field and the fix.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file. Fix: pass the path of a config file.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot be read ({exc}).") from None
    return parse_config(_decode(file, text), source=file, environ=environ)


def _decode(file: Path, text: str) -> Any:
    """JSON for `.json`, TOML for `.toml`; anything else is tried as JSON, then TOML."""
    suffix = file.suffix.lower()
    if suffix == ".toml":
        return _decode_toml(file, text)
    if suffix == ".json":
        return _decode_json(file, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            pass
    raise ConfigError(
        f"{file}: neither valid JSON nor valid TOML. Fix: name it .json or .toml "
        "to see the exact syntax error."
    )


def _decode_json(file: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{file}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg}). "
            "Fix: correct the syntax there (JSON allows no comments or trailing commas)."
        ) from None


def _decode_toml(file: Path, text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML ({exc}). Fix: correct the syntax there.") from None


def _resolve_paths(config: RouterConfig, base: Path, source: Path | None) -> RouterConfig:
    """Relative `cwd`, `cache_dir` and `command` paths are relative to the config file, as a
    reader expects (not to the server's `cwd`)."""

    def resolve(path: Path | None) -> Path | None:
        if path is None:
            return None
        path = path.expanduser()
        return path if path.is_absolute() else base / path

    servers: dict[str, StdioServer | RemoteServer] = {}
    for name, server in config.servers.items():
        if isinstance(server, StdioServer):
            update: dict[str, Any] = {"command": _resolve_command(server.command, base)}
            if server.cwd is not None:
                update["cwd"] = resolve(server.cwd)
            server = server.model_copy(update=update)
        servers[name] = server
    router = config.router.model_copy(update={"cache_dir": resolve(config.router.cache_dir)})
    return config.model_copy(update={"servers": servers, "router": router, "source": source})


def _resolve_command(command: str, base: Path) -> str:
    """`bin/server` or `~/bin/server` becomes an absolute path; a bare name (`uvx`) is left
    for the PATH lookup. Otherwise the OS would resolve it against whatever directory the
    host starts the router in, or against the server's `cwd`."""
    if command.startswith("~"):
        return str(Path(command).expanduser())
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if not any(sep in command for sep in separators) or Path(command).is_absolute():
        return command
    # Absolute: with `cwd` set, the OS would look for a relative one from there instead.
    return str((base / command).absolute())


def _field_path(loc: tuple[int | str, ...]) -> str:
    """`("mcpServers", "time", "stdio", "args", 0)` -> `mcpServers.time.args[0]`."""
    parts: list[str] = []
    for index, item in enumerate(loc):
        if index == 2 and item in _SERVER_KINDS:
            continue  # the union tag pydantic adds is not a key in the file
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts) or "(top level)"


_FIXES: dict[str, str] = {
    "missing": "add it",
    "server_kind": "give the entry `command` (and `args`) to start a local server, "
    "or `url` for a remote one",
    "list_type": 'write a list, e.g. ["--flag", "value"]',
    "dict_type": 'write an object, e.g. {"NAME": "value"}',
    "string_type": "write a string in quotes",
    "int_type": "write a whole number",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "float_parsing": "write a number of seconds",
    "float_type": "write a number of seconds",
    "greater_than": "use a larger value",
    "greater_than_equal": "use a larger value",
    "less_than_equal": "use a smaller value",
    "literal_error": "use one of the values named",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_too_short": "write a non-empty value",
    "env_var_missing": "set it in the environment the router starts in, "
    "or give a default as ${NAME:-default}",
    "protocol_setting": "use one of the values named",
    "url_scheme": "use an http:// or https:// URL",
    "store_url": "give the database's URL, or remove router.store for the local cache",
    "server_name": "rename the server",
}


def _describe(where: str, error: Any) -> str:
    loc: tuple[int | str, ...] = tuple(error["loc"])
    kind: str = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        meant = _closest(str(loc[-1]), allowed)
        if meant is not None:
            return (
                f"{where}: {_field_path(loc)}: unknown key '{loc[-1]}' \u2014 did you mean "
                f"'{meant}'? Fix: rename it to '{meant}' (the keys here: {', '.join(allowed)})."
            )
        return (
            f"{where}: {_field_path(loc)}: unknown key. Fix: remove it, or use one of: "
            f"{', '.join(allowed)}."
        )
    fix = _FIXES.get(kind, "see the configuration section of the README")
    return f"{where}: {_field_path(loc)}: {error['msg']}. Fix: {fix}."


def _misspelled_server_keys(where: str, data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Keys of server entries that look like a misspelled key the router reads (`comand`,
    `ulr`, `arg`), or another host's name for one (`serverUrl`): one message each, by
    server name.

    Server entries keep unknown keys (hosts put their own there), so pydantic cannot refuse
    these; left alone, `comand` would read as an entry without `command`, and `exlude` or
    `headrs` as a server with no filter or credentials.
    """
    field = next((key for key in ("mcpServers", "mcp_servers", "servers") if key in data), None)
    servers = data.get(field) if field is not None else None
    if not isinstance(servers, Mapping):
        return {}
    found: dict[str, list[str]] = {}
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            continue
        kind = _server_kind(entry)
        models = _KIND_MODELS[kind] if kind else (StdioServer, RemoteServer)
        known = {key for model in models for key in model.model_fields}
        for key in entry:
            if key in known or not isinstance(key, str):
                continue
            meant = _OTHER_SPELLINGS.get(key) or (
                None if key in _FOREIGN_KEYS else _closest(key, known - set(entry))
            )
            if meant is not None:
                found.setdefault(str(name), []).append(
                    f"{where}: {field}.{name}.{key}: unknown key '{key}' \u2014 did you mean "
                    f"'{meant}'? Fix: rename it to '{meant}'."
                )
    return found


def _closest(key: str, candidates: Iterable[str]) -> str | None:
    """The candidate `key` most likely misspells (difflib, case ignored), if any is close."""
    by_folded = {candidate.lower(): candidate for candidate in candidates}
    matches = difflib.get_close_matches(key.lower(), by_folded, n=1)
    return by_folded[matches[0]] if matches else None


def _allowed_keys(loc: tuple[int | str, ...]) -> list[str]:
    """Only the closed models can reject a key: `timeouts` objects, `router.http`, `router`."""
    closed: dict[int | str, type[BaseModel]] = {
        "timeouts": Timeouts,
        "http": HttpSettings,
        "limits": Limits,
        "policy": Policy,
    }
    model = closed.get(loc[-1], RouterSettings) if loc else RouterSettings
    return list(model.model_fields)
