"""Every key of the config file, read from the models themselves, and the reference table of
docs/configuration.md made from them (`python -m router.cli.config_reference` rewrites it), so the
page cannot drift from what the router accepts."""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import json
import sys
import textwrap
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from router.config.servers import RemoteServer, StdioServer
from router.config.settings import RouterConfig

__all__ = ["END", "PAGE", "START", "Key", "config_keys", "markdown", "write_page"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"

# What stands for a name the user chooses, by the field that holds the mapping.
_PLACEHOLDERS = {
    "servers": "SERVER",
    "tools": "TOOL",
    "upstreams": "SERVER",
    "profiles": "PROFILE",
    "quotas": "PROFILE",
    "endpoints": "ENDPOINT",
}
# What the page says of a key whose field has no docstring of its own, by the key's path
# with the user's names as placeholders; a model docstring, when one is written, wins.
_NOTES = {
    "mcpServers": "The upstream servers by name (also `mcp_servers` or `servers`).",
    "router": "The router's own settings.",
    "mcpServers.SERVER.disabled": "Not started (as listing the name in `router.disabled`).",
    "mcpServers.SERVER.timeouts": "This server's own `router.timeouts`.",
    "mcpServers.SERVER.include": "Only its tools these globs match are indexed.",
    "mcpServers.SERVER.exclude": "Its tools these globs match are left out.",
    "mcpServers.SERVER.command": "The program to start; a relative path with a `/` is taken "
    "from the config file's folder.",
    "mcpServers.SERVER.args": "Its arguments (`${VAR}` expands).",
    "mcpServers.SERVER.env": "Variables set for it, over the small inherited set (environment.md).",
    "mcpServers.SERVER.cwd": "The folder it starts in (relative: from the config file's).",
    "mcpServers.SERVER.url": "Its http(s) URL.",
    "mcpServers.SERVER.transport": "Unset: SSE when the path ends in `/sse`, else streamable "
    'HTTP (`type: "http"` or `"sse"` as other hosts write it also works).',
    "mcpServers.SERVER.headers": "Sent with every request (`${VAR}` expands; never logged).",
    "mcpServers.SERVER.timeouts.connect": "Seconds to start or reach it.",
    "mcpServers.SERVER.tools.TOOL.annotations": "MCP's tool annotation of that name.",
    "mcpServers.SERVER.oauth.clientSecret": "The pre-registered client's secret.",
    "mcpServers.SERVER.oauth.grant": "How the router gets its token: a browser sign-in, client "
    "credentials, or the front caller's token exchanged (auth.md).",
    "mcpServers.SERVER.oauth.signingAlgorithm": "The algorithm of the client assertion it "
    "signs (auth.md).",
    "router.quotas.PROFILE.upstreams.SERVER": "The same limit on this upstream's tools.",
    "router.secrets_key.env": "The variable that holds the key.",
    "router.secrets_key.file": "The file that holds the key.",
    "router.k": "Tools per search.",
    "router.model": "The embedding model: a manifest id or a local model folder.",
    "router.cache_dir": "The cache folder (embeddings, listings, pins, usage, sign-ins); "
    "unset: `MCP_ROUTER_CACHE_DIR`, else `~/.cache/mcp-router`.",
    "router.timeouts": "Every server's timeouts unless its entry sets its own.",
    "router.timeouts.connect": "Seconds to start or reach a server; also how long an early "
    "search waits for starting servers (default 30).",
    "router.disabled": "Servers not started, by name.",
    "router.include": "Only tools these `server/tool` globs match are indexed.",
    "router.exclude": "Tools these `server/tool` globs match are left out.",
    "router.http": "The HTTP front of `serve --http` (flags win).",
    "router.limits": "What a tool result may cost the model's context.",
    "router.policy": "Which tools may be called, and which ask first (policy.md).",
    "router.http.host": "The address to bind; beyond loopback a token or identities are required.",
    "router.http.port": "The port (0: any free one).",
    "router.http.oauth.jwks_uri": "The issuer's signing keys (default: its metadata names them).",
    "router.http.oauth.client_id": "This resource server's client id at the issuer "
    "(introspection).",
    "router.http.oauth.client_secret": "Its secret.",
    "router.http.oauth.algorithms": "Signature algorithms accepted.",
    "router.policy.allow": "When given, every tool no pattern names is denied.",
    "router.policy.deny": "Never listed, searched or called (wins over everything).",
    "router.policy.confirm": "The user is asked before each call.",
    "router.profiles.PROFILE.deny": "Tools the profile never sees.",
    "router.endpoints.ENDPOINT.mode": "Its own `router.mode`.",
    "router.endpoints.ENDPOINT.k": "Its own `router.k`.",
    "router.endpoints.ENDPOINT.policy": "Rules added to `router.policy` on this endpoint.",
}
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}


@dataclass(frozen=True)
class Key:
    """One key: its dotted path, the model section it sits in, and what the page says of it."""

    path: str
    section: str
    type: str
    default: str
    doc: str


def _name(name: str, field: FieldInfo) -> str:
    alias = field.validation_alias
    choices = getattr(alias, "choices", None)
    if choices:
        return str(choices[0])
    return alias if isinstance(alias, str) else name


@functools.cache
def _docstrings(cls: type) -> dict[str, str]:
    """The docstrings written under a class's fields (pydantic keeps none of them)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    found: dict[str, str] = {}
    for first, second in itertools.pairwise(body):
        if (
            isinstance(first, ast.AnnAssign)
            and isinstance(first.target, ast.Name)
            and isinstance(second, ast.Expr)
            and isinstance(second.value, ast.Constant)
            and isinstance(second.value.value, str)
        ):
            found[first.target.id] = " ".join(second.value.value.split())
    return found


def _doc(model: type[BaseModel], name: str) -> str:
    for cls in model.__mro__:
        if isinstance(cls, type) and name in _docstrings(cls):
            return _docstrings(cls)[name]
    return ""


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> list[Any]:
    annotation = _strip(annotation)
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [_strip(a) for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _models(annotation: Any) -> list[type[BaseModel]]:
    return [a for a in _members(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]


def _type(annotation: Any) -> str:
    names = []
    for member in _members(annotation):
        origin = typing.get_origin(member)
        if origin is Literal:
            names.append(" \\| ".join(f"`{json.dumps(v)}`" for v in typing.get_args(member)))
        elif origin is list:
            names.append(f"list of {_type(typing.get_args(member)[0])}s")
        elif origin is dict:
            value = typing.get_args(member)[1]
            named = _type(value)
            names.append("object" if _models(value) or named == "any" else f"object of {named}s")
        elif isinstance(member, type) and issubclass(member, BaseModel):
            names.append("object")
        elif isinstance(member, type) and issubclass(member, SecretStr):
            names.append("string (secret)")
        else:
            names.append(_SCALARS.get(member, "any"))
    return " or ".join(dict.fromkeys(names))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "see below"
        return f"`{json.dumps(value)}`"
    if field.default is None:
        return "unset"
    return f"`{json.dumps(field.default, default=str)}`"


def _walk(models: list[type[BaseModel]], section: str) -> list[Key]:
    found: dict[str, Key] = {}
    nested: list[Key] = []
    for model in models:
        kind = {StdioServer: " (a stdio server)", RemoteServer: " (a remote server)"}
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            key = _name(name, field)
            path = f"{section}.{key}" if section else key
            own = name in model.__annotations__ if model in kind else False
            note = _NOTES.get(path) or _NOTES.get(path.rsplit(".", 1)[0], "")
            doc = ((_doc(model, name) or note) + (kind[model] if own else "")).strip()
            if path not in found:
                found[path] = Key(path, section, _type(field.annotation), _default(field), doc)
            inner = _models(field.annotation)
            value = _strip(field.annotation)
            if typing.get_origin(value) is dict:
                inner = _models(typing.get_args(value)[1])
                path = f"{path}.{_PLACEHOLDERS.get(name, 'NAME')}"
            if inner and path not in {k.section for k in nested}:
                nested.extend(_walk(inner, path))
    return [*found.values(), *nested]


def config_keys() -> list[Key]:
    """Every key the config file accepts, sections in the order a file reads."""
    return _walk([RouterConfig], "")


def markdown() -> str:
    """One table per section, every key by its whole path."""
    out: list[str] = []
    section = None
    for key in config_keys():
        if key.section != section:
            section = key.section
            out += ["", f"### `{section or '(top level)'}`", ""]
            out += ["| key | type | default | what |", "|---|---|---|---|"]
        doc = key.doc.replace("|", "\\|")
        out.append(f"| `{key.path}` | {key.type} | {key.default} | {doc} |")
    return "\n".join(out[1:])


def write_page(page: Path = PAGE) -> None:
    """Rewrite the reference between the markers of `page`."""
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    page.write_text(f"{head}{START}\n{markdown()}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    write_page(Path(sys.argv[1]) if len(sys.argv) > 1 else PAGE)
