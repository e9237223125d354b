"""Codex: `~/.codex/config.toml` (or `$CODEX_HOME/config.toml`), and `.codex/config.toml` in
a trusted project; servers are `[mcp_servers.NAME]` tables.

A local server: `command`, `args`, `env`, `env_vars` (names of variables Codex passes on from
its own environment), `cwd`. A remote one (streamable HTTP): `url`, `bearer_token_env_var`,
`http_headers`, `env_http_headers` (header -> variable). Also `enabled`, `enabled_tools`,
`disabled_tools`, `startup_timeout_sec`, `tool_timeout_sec`, and for `codex mcp login`
`scopes`, an `oauth` table (`client_id`, `callback_port`, `callback_url`) and
`oauth_resource`. Each maps onto the router's keys: `env_vars = ["TOKEN"]` becomes `"env":
{"TOKEN": "${TOKEN}"}`, `bearer_token_env_var = "TOKEN"` a header `"Authorization": "Bearer
${TOKEN}"` (a static token, no sign-in), the tool lists `include` and `exclude`, the timeouts
`timeouts.connect` and `timeouts.call`, `scopes` and `oauth` the router's `oauth` section
(`scopes`, `clientId`, `callbackPort`; `callback_url` and `oauth_resource` are named in a
note, the router has neither).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from router.core.errors import ConfigError
from router.hosts import toml_edit
from router.hosts.base import ROUTER_ENTRY_NAME, FileFormat
from router.hosts.entries import Unconvertible, Variables, convert

__all__ = ["GLOBAL", "PROJECT"]

# Read here and mapped: not passed to the generic conversion as they are.
_MAPPED = frozenset(
    {
        "env_vars",
        "bearer_token_env_var",
        "http_headers",
        "env_http_headers",
        "enabled",
        "enabled_tools",
        "disabled_tools",
        "startup_timeout_sec",
        "startup_timeout_ms",
        "tool_timeout_sec",
        "scopes",
        "oauth",
    }
)
# The keys of Codex's `oauth` table (and its `scopes`) that the router's `oauth` section has.
_OAUTH = {"client_id": "clientId", "callback_port": "callbackPort", "scopes": "scopes"}


@dataclass(frozen=True)
class _CodexFile(FileFormat):
    def convert(self, raw: Any, variables: Variables) -> tuple[dict[str, Any], list[str]]:
        if not isinstance(raw, Mapping):
            raise Unconvertible("the entry is not a table")
        plain = {key: value for key, value in raw.items() if key not in _MAPPED}
        notes: list[str] = []
        env = _table(plain, "env")
        for item in raw.get("env_vars") or ():
            name = item.get("name") if isinstance(item, Mapping) else item
            if isinstance(item, Mapping) and item.get("source") == "remote":
                notes.append(f"env_vars {name}: a remote source is not something the router has")
            if isinstance(name, str):
                env.setdefault(name, "${" + name + "}")
        if env:
            plain["env"] = env
        headers = _table(raw, "http_headers")
        for header, variable in _table(raw, "env_http_headers").items():
            headers[header] = "${" + str(variable) + "}"
        if raw.get("bearer_token_env_var"):
            headers["Authorization"] = "Bearer ${" + str(raw["bearer_token_env_var"]) + "}"
        if headers:
            plain["headers"] = headers
        timeouts = _timeouts(raw)
        if timeouts:
            plain["timeouts"] = {**timeouts, **(plain.get("timeouts") or {})}
        if raw.get("enabled") is False:
            plain["disabled"] = True
        oauth = _table(raw, "oauth")
        if raw.get("scopes") is not None:
            oauth["scopes"] = raw["scopes"]
        if oauth:
            plain["oauth"] = oauth
        if raw.get("enabled_tools"):
            plain["include"] = [str(name) for name in raw["enabled_tools"]]
        if raw.get("disabled_tools"):
            plain["exclude"] = [str(name) for name in raw["disabled_tools"]]
        entry, more = convert(plain, variables, oauth_names=_OAUTH)
        return entry, [*notes, *more]

    def router_entry(self, command: str, args: Sequence[str]) -> dict[str, Any]:
        return {"command": command, "args": list(args)}

    def install(self, text: str, command: str, args: Sequence[str]) -> str:
        try:
            return toml_edit.replace_tables(
                text, "mcp_servers", {ROUTER_ENTRY_NAME: self.router_entry(command, args)}
            )
        except toml_edit.TomlEditError as exc:
            raise ConfigError(
                f"{self.label}: cannot rewrite this file safely ({exc}). Fix: write each "
                "server as an [mcp_servers.NAME] table, or edit the file by hand."
            ) from None


def _table(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, Mapping):
        raise Unconvertible(f"`{key}` is not a table")
    return dict(value)


def _timeouts(raw: Mapping[str, Any]) -> dict[str, Any]:
    timeouts: dict[str, Any] = {}
    if "startup_timeout_sec" in raw:
        timeouts["connect"] = raw["startup_timeout_sec"]
    elif isinstance(raw.get("startup_timeout_ms"), int | float):
        timeouts["connect"] = raw["startup_timeout_ms"] / 1000
    if "tool_timeout_sec" in raw:
        timeouts["call"] = raw["tool_timeout_sec"]
    return timeouts


GLOBAL = _CodexFile(host="codex", label="Codex", syntax="toml", servers_key=("mcp_servers",))
PROJECT = _CodexFile(
    host="codex", label="Codex (project)", syntax="toml", servers_key=("mcp_servers",)
)
