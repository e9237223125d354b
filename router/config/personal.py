"""Per-user upstream credentials: where their encryption key comes from, how many
per-principal connections may be open, and per-user values in a server entry.

```json
"router": {
  "secrets_key": {"env": "MCP_ROUTER_SECRETS_KEY"},
  "personal": {"max_connections": 256, "idle_seconds": 600}}
```

The key is never in the config itself: `{"env": NAME}` names an environment variable and
`{"file": PATH}` a file (relative to the config's folder), each holding at least 32
characters of key material. Unset, the variable `MCP_ROUTER_SECRETS_KEY` is read, and without
it a key file is made in the cache folder (0600) on one machine; replicas of a shared store
must name the same key, so there the key is required.

## Per-user values

```json
"github": {"command": "github-mcp-server", "args": ["stdio"],
           "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${user:GITHUB_TOKEN}"}},
"linear": {"url": "https://mcp.linear.app/mcp",
           "headers": {"Authorization": "Bearer ${user:LINEAR_KEY}"}}
```

A placeholder rather than a list of per-user keys (`"perUser": {"env": [...]}`): the value
sits where it is used, beside the `${VAR}` the operator's own secrets already use, so the
`Bearer ` of a header stays in the config and the person enters the key alone; one name
may fill several places; and `oauth.perUser` stays what it is, a switch for OAuth, which
has no value to place. Placeholders go in a local server's `env` values and a remote
server's `headers` values only (an argument shows in every process listing). A server with
any is per user (`router.upstream.personal`): it needs identities at the front.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from router.config.servers import RemoteServer, StdioServer
from router.core.errors import ConfigError

__all__ = [
    "DEFAULT_KEY_ENV",
    "PersonalSettings",
    "SecretsKey",
    "check_user_values",
    "is_personal",
    "user_value_names",
    "with_user_values",
]

DEFAULT_KEY_ENV = "MCP_ROUTER_SECRETS_KEY"


class SecretsKey(BaseModel):
    """`router.secrets_key`: an environment variable or a file that holds the key."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(default=None, min_length=1)
    file: Path | None = None

    @model_validator(mode="after")
    def _one_source(self) -> SecretsKey:
        if (self.env is None) == (self.file is None):
            raise PydanticCustomError(
                "secrets_key",
                'name exactly one of "env" (a variable) or "file" (a path); the key itself '
                "never goes in the config",
                {},
            )
        return self


class PersonalSettings(BaseModel):
    """`router.personal`: the bounds on per-principal upstream connections."""

    model_config = ConfigDict(extra="forbid")

    max_connections: int = Field(default=256, ge=1, le=100_000)
    """Per-principal connections open at once, all per-user upstreams together; past it the
    least recently used one is closed."""
    idle_seconds: float = Field(default=600.0, gt=0)
    """A per-principal connection without a request for this long is closed."""


USER_VALUE = re.compile(r"\$\{user:([A-Za-z_][A-Za-z0-9_]{0,63})\}")
_ANY = "${user:"


def _places(server: StdioServer | RemoteServer) -> dict[str, str]:
    if isinstance(server, StdioServer):
        return server.env
    return server.headers


def user_value_names(server: StdioServer | RemoteServer) -> tuple[str, ...]:
    """The names of the values each principal enters for `server`, sorted; () for none."""
    found = {m.group(1) for v in _places(server).values() for m in USER_VALUE.finditer(v)}
    return tuple(sorted(found))


def is_personal(server: StdioServer | RemoteServer) -> bool:
    """Whether each principal reaches `server` on a connection of its own: a sign-in per
    user, token exchange (`oauth.perUser`), or per-user values (`${user:NAME}`)."""
    oauth = server.oauth if isinstance(server, RemoteServer) else None
    return (oauth is not None and oauth.personal) or bool(user_value_names(server))


def with_user_values(
    server: StdioServer | RemoteServer, values: dict[str, str]
) -> StdioServer | RemoteServer:
    """`server` with each placeholder replaced by one principal's value (every name of
    `user_value_names` must be in `values`)."""
    filled = {
        k: USER_VALUE.sub(lambda m: values[m.group(1)], v) for k, v in _places(server).items()
    }
    field = "env" if isinstance(server, StdioServer) else "headers"
    return server.model_copy(update={field: filled})


def _misplaced(server: StdioServer | RemoteServer) -> str | None:
    """The field of `server` that holds a placeholder where none may go."""
    if isinstance(server, StdioServer):
        texts = {"command": server.command, "cwd": str(server.cwd or "")}
        texts.update({f"args[{i}]": a for i, a in enumerate(server.args)})
        texts.update({f"env keys ({k})": k for k in server.env})
    else:
        texts = {"url": server.url}
        texts.update({f"headers keys ({k})": k for k in server.headers})
    for field, text in texts.items():
        if _ANY in text:
            return field
    for key, value in _places(server).items():
        if _ANY in USER_VALUE.sub("", value):
            return f"{'env' if isinstance(server, StdioServer) else 'headers'}.{key}"
    return None


def check_user_values(
    servers: Mapping[str, StdioServer | RemoteServer],
    where: str,
    *,
    identities: bool,
    key_needed: bool,
) -> None:
    """Refuse per-user values where they cannot work, naming the file, field and fix.
    `identities`: the front has them (`router.http.oauth`); `key_needed`: a store is
    named without `router.secrets_key`.

    Raises:
        ConfigError: a placeholder outside `env`/`headers` values, a malformed one, one
            beside `oauth.perUser`, or any without identities at the front.
    """
    for name, server in servers.items():
        field = _misplaced(server)
        if field is not None:
            raise ConfigError(
                f"{where}: mcpServers.{name}.{field}: a per-user value goes only in a "
                "local server's env values or a remote server's header values, spelt "
                "${user:NAME} (letters, digits, _). Fix: move it there, or spell it so."
            )
        if not user_value_names(server):
            continue
        oauth = server.oauth if isinstance(server, RemoteServer) else None
        if oauth is not None and oauth.personal:
            raise ConfigError(
                f"{where}: mcpServers.{name}.oauth: a server takes either a sign-in per user "
                "or per-user values (${user:NAME}), not both. Fix: remove one."
            )
        if not identities:
            raise ConfigError(
                f"{where}: mcpServers.{name}: per-user values (${{user:...}}) need identities "
                "at the front, and none are configured. Fix: set router.http.oauth (and "
                "serve with --http), or put one value for everyone (${VAR})."
            )
        if key_needed:
            raise ConfigError(
                f"{where}: mcpServers.{name}: with router.store every replica must decrypt "
                "the same values, and router.secrets_key is not set. Fix: set "
                'router.secrets_key to {"env": "VAR"} or {"file": "PATH"}.'
            )
