"""One host's server entry turned into the router's: `command/args/env/cwd` or `url/headers`.

Hosts agree on the shape and differ in the details: Windsurf writes `serverUrl`, VS Code and
Claude Code a `type` of `stdio`, `http` or `sse`, Cursor, VS Code and Windsurf expand
`${env:NAME}`, VS Code prompts for `${input:id}` values, editors know `${workspaceFolder}`.
`convert` writes each in the router's terms and says what it changed in `notes`:

- `${env:NAME}` becomes `${NAME}`, which the router expands from its own environment (in
  `env` and `headers`).
- `${input:api-key}` becomes `${API_KEY}`: the router cannot prompt, so the value has to be
  in the environment it starts in; the note says which variable.
- `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}` and `${pathSeparator}`
  become the paths they stand for at import time.
- A remote entry's `oauth` settings are carried over as the router's `oauth` section
  (`router/hosts/oauth.py`): the keys the router knows, in its spelling; any other key is
  named in a note.
- Keys the router has no use for (`type`, `autoApprove`, ...) are left out; `envFile` and
  other keys that change what runs are named in a note.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from router.hosts import oauth

__all__ = [
    "ROUTER_CONFIG_LABEL",
    "Found",
    "RouterEntry",
    "Skipped",
    "Unconvertible",
    "Variables",
    "convert",
    "identity",
    "input_variable",
    "launches_router",
    "served_config",
]

ROUTER_CONFIG_LABEL = "router config"
"""The label of the servers read from a router config that an earlier `--install` serves."""

# Keys of a router server entry that pass through as they are (a router config as a source).
_ROUTER_KEYS = (
    "disabled",
    "protocol",
    "timeouts",
    "include",
    "exclude",
    "prefix",
    "result_tokens",
    "confirm_destructive",
)
# Other hosts' names for a tool filter.
_FILTER_KEYS = {"disabledTools": "exclude", "includeTools": "include", "excludeTools": "exclude"}
# Keys read above, and keys that only steer the host itself (its UI, approvals, its own
# timeouts): left out quietly. Any other key is named in a note.
_KNOWN = frozenset(
    {
        "type",
        "transport",
        "autoApprove",
        "alwaysAllow",
        "description",
        "timeout",
        "name",
        "icon",
        "notes",
        "dev",
        "trust",
        "transportType",
        "enabled",
        "gallery",
        "version",
        "serverUrl",
        "httpUrl",
        "url",
        "command",
        "args",
        "env",
        "cwd",
        "headers",
        *_FILTER_KEYS,
    }
)
_REMOTE_TYPES = {
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamableHttp": "streamable-http",
    "streamable_http": "streamable-http",
    "sse": "sse",
}
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_ROUTER_VAR = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
# The router expands `${VAR}` in these fields only; elsewhere a placeholder stays as written.
_EXPANDED_FIELDS = ("env", "headers")
_EXPANDED_OAUTH = frozenset(f"oauth.{key}" for key in oauth.EXPANDED)


class Unconvertible(ValueError):
    """The entry cannot become a router server; the message says why."""


@dataclass(frozen=True)
class Variables:
    """How a host writes variables in an entry, and what they stand for here."""

    home: Path
    project: Path
    env_prefix: bool = False
    """`${env:NAME}` (Cursor, VS Code, Windsurf)."""
    editor: bool = False
    """`${userHome}`, `${workspaceFolder}`, ... (Cursor, VS Code)."""
    inputs: Mapping[str, str] | None = None
    """VS Code's `inputs` by id (their descriptions); None where there are none to prompt."""
    environ: Mapping[str, str] = field(default_factory=dict)
    """Where a `${VAR}` in a `url` is looked up at import time: the router reads a URL as
    it is written."""


@dataclass(frozen=True)
class Found:
    """A server read from a host file, in the router's shape."""

    name: str
    entry: dict[str, Any]
    host: str
    """The host's id (`cursor`), added to the name when another server has it already."""
    where: str
    """The file, and the place in it when it has several (Claude Code's projects)."""
    label: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A server entry that cannot be imported, and why."""

    name: str
    where: str
    label: str
    reason: str


@dataclass(frozen=True)
class RouterEntry:
    """An entry that starts the router itself (an earlier `--install`)."""

    name: str
    where: str
    label: str
    config: Path | None


@dataclass
class FileRead:
    """What one host file holds."""

    path: Path
    label: str
    found: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    routers: list[RouterEntry] = field(default_factory=list)


def convert(
    raw: Any,
    variables: Variables,
    *,
    oauth_key: str = "oauth",
    oauth_names: Mapping[str, str] = oauth.NAMES,
) -> tuple[dict[str, Any], list[str]]:
    """The router entry for one host entry, and notes on what changed.

    `oauth_key` is where the host keeps a remote server's OAuth settings, `oauth_names` its
    spelling of each key the router knows (by default the router's own).

    Raises:
        Unconvertible: The entry starts nothing the router can start.
    """
    if not isinstance(raw, Mapping):
        raise Unconvertible("the entry is not an object")
    notes: list[str] = []
    kind = raw.get("type") or raw.get("transport")
    kind = kind if isinstance(kind, str) else None
    url = next((raw[key] for key in ("url", "serverUrl", "httpUrl") if key in raw), None)
    command = raw.get("command")
    entry: dict[str, Any]
    oauth_notes: list[str] = []
    section = raw.get(oauth_key)
    if command is not None and (kind not in _REMOTE_TYPES or url is None):
        entry = _stdio(raw, command)
        if section is not None:
            oauth_notes.append(f"left out: {oauth_key} (a local server does not sign in)")
    elif url is not None:
        entry = {"url": _text(url, "url")}
        if "headers" in raw:
            entry["headers"] = _mapping(raw["headers"], "headers")
        if kind in _REMOTE_TYPES:
            entry["transport"] = _REMOTE_TYPES[kind]
        if section is not None:
            if not isinstance(section, Mapping):
                raise Unconvertible(f"`{oauth_key}` is not an object")
            entry["oauth"], oauth_notes = oauth.carry(section, oauth_key, oauth_names)
    else:
        raise Unconvertible("it has neither `command` nor `url`")
    for key in _ROUTER_KEYS:
        if key in raw:
            entry[key] = raw[key]
    if raw.get("enabled") is False:
        entry["disabled"] = True
    for key, meant in _FILTER_KEYS.items():
        if isinstance(raw.get(key), list) and raw[key]:
            entry[meant] = [*entry.get(meant, []), *map(str, raw[key])]
    _interpolate(entry, variables, notes)
    for key in ("args", "env", "headers", "oauth"):
        if key in entry and not entry[key]:
            del entry[key]  # `"env": {}` says nothing, and would only differ in the output
    notes = [*dict.fromkeys(notes), *oauth_notes]
    if "envFile" in raw:
        notes.append(
            f"envFile {raw['envFile']!r} is not read by the router: copy the variables it "
            "sets into this server's env"
        )
    dropped = sorted(str(key) for key in raw if key not in _KNOWN and key not in _ROUTER_KEYS)
    dropped = [key for key in dropped if key not in ("envFile", oauth_key)]
    if dropped:
        notes.append(f"left out: {', '.join(dropped)} (the router has no such setting)")
    return entry, notes


def _stdio(raw: Mapping[str, Any], command: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": _text(command, "command")}
    if "args" in raw:
        args = raw["args"]
        if not isinstance(args, list):
            raise Unconvertible("`args` is not a list")
        entry["args"] = [_scalar(item, "args") for item in args]
    if "env" in raw:
        entry["env"] = _mapping(raw["env"], "env")
    if raw.get("cwd") is not None:
        entry["cwd"] = _text(raw["cwd"], "cwd")
    return entry


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise Unconvertible(f"`{key}` is not a non-empty string")
    return value


def _scalar(value: Any, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise Unconvertible(f"`{key}` holds {type(value).__name__} {value!r}, not text")


def _mapping(value: Any, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise Unconvertible(f"`{key}` is not an object")
    return {str(name): _scalar(item, f"{key}.{name}") for name, item in value.items()}


def _interpolate(entry: dict[str, Any], variables: Variables, notes: list[str]) -> None:
    """Write every host variable in the router's terms, in place."""

    def fix(value: str, where: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            inner = match.group(1)
            kind, _, rest = inner.partition(":")
            if variables.env_prefix and kind == "env" and rest:
                return "${" + rest + "}"
            if variables.inputs is not None and kind == "input" and rest:
                name = input_variable(rest)
                asked = variables.inputs.get(rest)
                what = f" (VS Code asks for {asked!r})" if asked else ""
                notes.append(
                    f"{where}: ${{input:{rest}}}{what} is now ${{{name}}}: set {name} in the "
                    "environment the router starts in"
                )
                return "${" + name + "}"
            if variables.editor:
                editor = _editor_variable(inner, variables)
                if editor is not None:
                    if inner.startswith("workspaceFolder"):
                        notes.append(f"{where}: ${{{inner}}} is {editor!r} (the project read)")
                    return editor
            if kind == "file" and rest:
                notes.append(
                    f"{where}: the router does not read ${{file:...}}: put the value there"
                )
            return match.group(0)

        fixed = _PLACEHOLDER.sub(substitute, value)
        if where == "url" and _ROUTER_VAR.search(fixed):
            resolved = _ROUTER_VAR.sub(lambda match: _lookup(match, variables.environ), fixed)
            if not _ROUTER_VAR.search(resolved):
                notes.append(f"url: {fixed!r} is {resolved!r} now (a URL is read as written)")
                fixed = resolved
        field_name = where.split(".", 1)[0].split("[", 1)[0]
        expanded = field_name in (*_EXPANDED_FIELDS, "args") or where in _EXPANDED_OAUTH
        if not expanded and _ROUTER_VAR.search(fixed):
            notes.append(
                f"{where}: the router expands ${{VAR}} in args, env, headers and oauth "
                f"credentials only; {fixed!r} is passed as written"
            )
        return fixed

    for key in ("command", "cwd", "url"):
        if key in entry:
            entry[key] = fix(entry[key], key)
    if "args" in entry:
        entry["args"] = [fix(arg, f"args[{index}]") for index, arg in enumerate(entry["args"])]
    for key in _EXPANDED_FIELDS:
        if key in entry:
            entry[key] = {name: fix(value, f"{key}.{name}") for name, value in entry[key].items()}
    if "oauth" in entry:
        entry["oauth"] = oauth.fill_in(entry["oauth"], fix)


def _lookup(match: re.Match[str], environ: Mapping[str, str]) -> str:
    """`${VAR}` or `${VAR:-default}` from `environ`; the placeholder itself if neither."""
    name, _, default = match.group(0)[2:-1].partition(":-")
    if name in environ:
        return environ[name]
    return default if ":-" in match.group(0) else match.group(0)


def _editor_variable(name: str, variables: Variables) -> str | None:
    if name == "userHome":
        return str(variables.home)
    if name == "workspaceFolder":
        return str(variables.project)
    if name == "workspaceFolderBasename":
        return variables.project.name
    if name in ("pathSeparator", "/"):
        return os.sep
    return None


def input_variable(input_id: str) -> str:
    """The environment variable that stands for VS Code's `${input:input_id}`."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", input_id).upper()
    return name if re.match(r"[A-Za-z_]", name) else f"INPUT_{name}"


def identity(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two entries the same server: what is started, or where it is reached."""
    if "command" in entry:
        return (
            "stdio",
            entry["command"],
            tuple(entry.get("args", ())),
            tuple(sorted(entry.get("env", {}).items())),
            entry.get("cwd"),
        )
    return ("remote", entry["url"].rstrip("/"), tuple(sorted(entry.get("headers", {}).items())))


def launches_router(entry: Mapping[str, Any]) -> bool:
    """Whether the entry runs `mcp-router serve` (or `python -m router serve`)."""
    command = entry.get("command")
    if not isinstance(command, str):
        return False
    args = [str(arg) for arg in entry.get("args", ())]
    words = [Path(command).name.removesuffix(".exe"), *args]
    runs_router = "mcp-router" in words or ("-m", "router") in itertools.pairwise(words)
    return runs_router and "serve" in args


def served_config(entry: Mapping[str, Any], base: Path) -> Path | None:
    """The `--config` file of an entry that runs the router (relative to `base`), if given."""
    args = [str(arg) for arg in entry.get("args", ())]
    for index, arg in enumerate(args):
        value = None
        if arg == "--config" and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith("--config="):
            value = arg.removeprefix("--config=")
        if value:
            path = Path(value).expanduser()
            return path if path.is_absolute() else base / path
    return None
