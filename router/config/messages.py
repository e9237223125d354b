"""Error messages: a pydantic validation error turned into `ConfigError` text that names the
file, the field path and the fix, and the did-you-mean for misspelled keys (`comand`,
`exlude`) and other hosts' names for the router's keys (`serverUrl`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from router.config.oauth import OAuthSettings
from router.config.servers import (
    FOREIGN_KEYS,
    KIND_MODELS,
    SERVER_KINDS,
    RemoteServer,
    StdioServer,
    Timeouts,
    server_kind,
)
from router.config.settings import HttpSettings, Limits, Policy, RouterSettings

__all__ = ["describe", "misspelled_server_keys"]

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


def _field_path(loc: tuple[int | str, ...]) -> str:
    """`("mcpServers", "time", "stdio", "args", 0)` -> `mcpServers.time.args[0]`."""
    parts: list[str] = []
    for index, item in enumerate(loc):
        if index == 2 and item in SERVER_KINDS:
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


def describe(where: str, error: Any) -> str:
    """One pydantic error as a line naming the file, the field path and the fix."""
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


def misspelled_server_keys(where: str, data: Mapping[str, Any]) -> dict[str, list[str]]:
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
        kind = server_kind(entry)
        models = KIND_MODELS[kind] if kind else (StdioServer, RemoteServer)
        known = {key for model in models for key in model.model_fields}
        for key in entry:
            if key in known or not isinstance(key, str):
                continue
            meant = _OTHER_SPELLINGS.get(key) or (
                None if key in FOREIGN_KEYS else _closest(key, known - set(entry))
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
    """Only the closed models can reject a key: `timeouts` objects, `router.http`, `router`,
    a remote entry's `oauth` (whose keys are written as Claude Code spells them)."""
    closed: dict[int | str, type[BaseModel]] = {
        "timeouts": Timeouts,
        "http": HttpSettings,
        "limits": Limits,
        "policy": Policy,
        "oauth": OAuthSettings,
    }
    model = closed.get(loc[-1], RouterSettings) if loc else RouterSettings
    if model is OAuthSettings:
        return [field.alias or name for name, field in model.model_fields.items()]
    return list(model.model_fields)
