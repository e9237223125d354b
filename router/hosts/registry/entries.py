"""A registry `server.json` as an `mcpServers` entry (`mcp-router add`).

A launchable choice is made: an npm or PyPI package run over stdio, else a remote
(streamable HTTP or SSE). OCI images, NuGet and MCPB bundles, and packages that serve HTTP
themselves are noted as not run by the router. Every value the user must supply (a secret,
a required value without a default, a `{name}` in a fixed value) becomes a `${VAR}`
placeholder, never a value, and is named in `Added.needed`; optional ones without a default
are left out and named in `Added.optional` (how placeholders are named: `placeholders`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.core.errors import ConfigError
from router.hosts.registry.document import (
    RUNNABLE,
    TEMPLATE,
    Input,
    Package,
    Remote,
    ServerDocument,
)
from router.hosts.registry.placeholders import Placeholders, variable_name

__all__ = ["Added", "choose", "entry_for", "entry_name"]


@dataclass
class Added:
    """An entry made from a server.json, and what the user must know about it."""

    name: str
    entry: dict[str, Any]
    chosen: str
    """What was chosen, in words (`npm @upstash/context7-mcp@2.0.2`)."""
    needed: list[Input] = field(default_factory=list)
    """Values the entry reads from the environment (`${NAME}`): set them before it starts."""
    optional: list[Input] = field(default_factory=list)
    """Values the server takes but does not need: left out of the entry."""
    defaulted: list[Input] = field(default_factory=list)
    """Placeholders with a default (`${NAME:-default}`): set them to change it."""
    notes: list[str] = field(default_factory=list)
    install: Package | None = None
    """The package `--install` installs (its command is then the installed one)."""
    installed_args: list[str] = field(default_factory=list)
    """The arguments the installed command takes: the package's own, not the runtime's."""


def choose(
    document: ServerDocument, prefer: str | None = None
) -> tuple[Package | Remote, list[str]]:
    """The package or remote to run: `prefer` (`npm`, `pypi` or `remote`) if the document
    has it, else its first npm or PyPI package served over stdio, else its first remote."""
    notes: list[str] = []
    runnable: list[Package] = []
    for package in document.packages:
        if package.registry not in RUNNABLE:
            notes.append(f"{package.label}: {package.registry} packages are not run by the router")
        elif package.transport != "stdio":
            notes.append(
                f"{package.label}: serves {package.transport} itself; not run by the router"
            )
        else:
            runnable.append(package)
    remotes = [r for r in document.remotes if r.transport in ("streamable-http", "sse")]
    if prefer == "remote" and remotes:
        return remotes[0], notes
    preferred = [p for p in runnable if p.registry == prefer]
    if preferred:
        return preferred[0], notes
    if prefer is not None and prefer != "remote":
        notes.append(f"no {prefer} package to run: choosing another")
    if runnable:
        return runnable[0], notes
    if remotes:
        return remotes[0], notes
    reasons = "; ".join(notes) or "it has no packages and no remotes"
    raise ConfigError(f"{document.name}: nothing the router can run ({reasons})")


def entry_for(
    document: ServerDocument,
    *,
    name: str | None = None,
    prefer: str | None = None,
    values: Mapping[str, str] | None = None,
    version: str | None = None,
) -> Added:
    """The `mcpServers` entry for `document`; `values` fill URL template variables, and
    `version` runs another release of the package than the document names."""
    chosen, notes = choose(document, prefer)
    if version is not None and isinstance(chosen, Package):
        chosen = dataclasses.replace(chosen, version=version)
    key = name or entry_name(document.name)
    if document.status in ("deprecated", "deleted"):
        notes.append(f"the registry marks {document.name} {document.status}")
    if isinstance(chosen, Remote):
        return _remote_entry(key, document, chosen, dict(values or {}), notes)
    return _package_entry(key, chosen, notes)


def entry_name(server_name: str) -> str:
    """`io.github.upstash/context7` -> `context7`: the name in `mcpServers`."""
    tail = server_name.rsplit("/", 1)[-1].lower()
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", tail).strip("-_")
    return cleaned or "server"


def _placeholders(added: Added) -> Placeholders:
    return Placeholders(
        added.name, needed=added.needed, optional=added.optional, defaulted=added.defaulted
    )


def _arguments(items: Sequence[Input], collect: Placeholders) -> list[str]:
    args: list[str] = []
    for item in items:
        if item.kind == "named":
            flag = item.name
            variable = variable_name(flag.lstrip("-"))
            if item.is_boolean and item.value is None and item.default is None:
                if item.required:
                    args.append(flag)
                continue
            # an optional flag's default is the server's own: left out, not repeated
            value = collect.value(item, variable, defaults=False)
            if value is not None:
                args += [flag, value] if flag else [value]
        else:
            variable = variable_name(item.value_hint or item.name or "argument")
            value = collect.value(item, variable)
            if value is not None:
                args.append(value)
    return args


def _package_entry(key: str, package: Package, notes: list[str]) -> Added:
    added = Added(key, {}, package.label, notes=notes, install=package)
    collect = _placeholders(added)
    runtime = _arguments(package.runtime_arguments, collect)
    version = package.version
    if version is not None and ("$" in version or "{" in version):
        notes.append(f"its version {version!r} is a placeholder: the latest is run")
        version = None
    if package.registry == "npm":
        spec = f"{package.identifier}@{version}" if version else package.identifier
        command, args = "npx", ["-y", *runtime, spec]
    else:
        spec = f"{package.identifier}=={version}" if version else package.identifier
        command, args = "uvx", [*runtime, spec]
    added.installed_args = _arguments(package.package_arguments, collect)
    args += added.installed_args
    env = {}
    for item in package.environment:
        value = collect.value(item, variable_name(item.name))
        if value is not None:
            env[item.name] = value
    added.entry = {"command": command, "args": args}
    if env:
        added.entry["env"] = env
    return added


def _remote_entry(
    key: str, document: ServerDocument, remote: Remote, values: dict[str, str], notes: list[str]
) -> Added:
    added = Added(key, {}, remote.label, notes=notes)
    collect = _placeholders(added)
    missing = []

    def url_part(match: re.Match[str]) -> str:
        var = remote.variables.get(match[1])
        given = values.get(match[1])
        if given is not None:
            return given
        if var is not None and var.default is not None:
            return var.default
        missing.append(match[1])
        return match[0]

    url = TEMPLATE.sub(url_part, remote.url)
    if missing:
        wanted = " ".join(f"--set {m}=VALUE" for m in missing)
        raise ConfigError(
            f"{document.name}: its URL {remote.url} needs {', '.join(missing)}: pass {wanted}"
        )
    headers = {}
    for item in remote.headers:
        value = collect.value(item, variable_name(key, item.name))
        if value is not None:
            headers[item.name] = value
    added.entry = {"url": url}
    if remote.transport == "sse":
        added.entry["transport"] = "sse"
    if headers:
        added.entry["headers"] = headers
    return added
