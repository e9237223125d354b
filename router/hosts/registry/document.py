"""A registry `server.json` read in every schema version the registry has published.

The versions differ in casing and names (2025-07-09 is snake_case and came in three shapes;
2025-09-16 on is camelCase; 2025-12-11 adds URL template `variables` to remotes), and the
`$schema` URL does not say which shape a document has: every field is read by whichever of
its names is present. A registry API answer (`{"server": {...}, "_meta": ...}`) is unwrapped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from router.core.errors import ConfigError

__all__ = ["RUNNABLE", "Input", "Package", "Remote", "ServerDocument", "read_server"]

RUNNABLE = ("npm", "pypi")
"""Package registries whose packages the router starts (with npx / uvx, or installed)."""
TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def _get(raw: Mapping[str, Any], *names: str) -> Any:
    """A field by the first of its names (camelCase, snake_case, older) that is present."""
    for name in names:
        if name in raw:
            return raw[name]
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class Input:
    """An environment variable, header, argument or URL variable a server takes."""

    name: str
    description: str = ""
    required: bool = False
    secret: bool = False
    value: str | None = None
    """Fixed by the publisher (it may hold `{var}` references to `variables`)."""
    default: str | None = None
    kind: str = "positional"
    """For arguments: `positional` or `named` (`name` is then the flag, dashes and all)."""
    value_hint: str | None = None
    is_boolean: bool = False
    variables: Mapping[str, Input] = field(default_factory=dict)

    @classmethod
    def read(cls, raw: Any) -> Input:
        if isinstance(raw, str):  # some early documents list bare values
            return cls(name=raw, value=raw)
        if not isinstance(raw, Mapping):
            raise ConfigError(f"an input must be an object, not {raw!r}")
        return cls(
            name=str(_get(raw, "name") or _get(raw, "valueHint", "value_hint") or ""),
            description=str(_get(raw, "description") or ""),
            required=bool(_get(raw, "isRequired", "is_required")),
            secret=bool(_get(raw, "isSecret", "is_secret")),
            value=_text(_get(raw, "value")),
            default=_text(_get(raw, "default")),
            kind=str(_get(raw, "type") or "positional"),
            value_hint=_get(raw, "valueHint", "value_hint"),
            is_boolean=_get(raw, "format") == "boolean",
            variables=_variables(raw),
        )


@dataclass(frozen=True, slots=True)
class Package:
    registry: str
    identifier: str
    version: str | None
    runtime_hint: str | None
    transport: str
    runtime_arguments: tuple[Input, ...] = ()
    package_arguments: tuple[Input, ...] = ()
    environment: tuple[Input, ...] = ()

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> Package:
        transport = _get(raw, "transport")
        kind = transport.get("type") if isinstance(transport, Mapping) else transport
        return cls(
            registry=str(_get(raw, "registryType", "registry_type", "registry_name") or ""),
            identifier=str(_get(raw, "identifier", "name") or ""),
            version=_text(_get(raw, "version")),
            runtime_hint=_get(raw, "runtimeHint", "runtime_hint"),
            transport=str(kind or "stdio"),
            runtime_arguments=_inputs(_get(raw, "runtimeArguments", "runtime_arguments")),
            package_arguments=_inputs(_get(raw, "packageArguments", "package_arguments")),
            environment=_inputs(_get(raw, "environmentVariables", "environment_variables")),
        )

    @property
    def label(self) -> str:
        version = f"@{self.version}" if self.version else ""
        return f"{self.registry} {self.identifier}{version}"


@dataclass(frozen=True, slots=True)
class Remote:
    transport: str
    url: str
    headers: tuple[Input, ...] = ()
    variables: Mapping[str, Input] = field(default_factory=dict)

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> Remote:
        kind = str(_get(raw, "type", "transport_type") or "streamable-http")
        return cls(
            transport="streamable-http" if kind == "streamable" else kind,
            url=str(_get(raw, "url") or ""),
            headers=_inputs(_get(raw, "headers")),
            variables=_variables(raw),
        )

    @property
    def label(self) -> str:
        return f"remote {self.transport} {self.url}"


def _variables(raw: Mapping[str, Any]) -> dict[str, Input]:
    """An input's or a remote's `variables`: the inputs its `{name}` references stand for."""
    variables = _get(raw, "variables") or {}
    return {
        str(k): Input.read({"name": k, **v}) for k, v in variables.items() if isinstance(v, Mapping)
    }


def _inputs(raw: Any) -> tuple[Input, ...]:
    return tuple(Input.read(item) for item in raw) if isinstance(raw, list) else ()


@dataclass(frozen=True, slots=True)
class ServerDocument:
    name: str
    description: str
    version: str | None
    title: str | None
    packages: tuple[Package, ...]
    remotes: tuple[Remote, ...]
    status: str | None = None
    """The registry's `status` (`active`, `deprecated`, `deleted`), where it says."""


def read_server(document: Any) -> ServerDocument:
    """A `server.json` (or a registry API answer holding one) in any published shape."""
    if not isinstance(document, Mapping):
        raise ConfigError("a server.json must be a JSON object")
    raw = document.get("server", document)
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ConfigError("a server.json needs a `name` (such as io.github.owner/server)")
    official = (document.get("_meta") or raw.get("_meta") or {}).get(
        "io.modelcontextprotocol.registry/official", {}
    )
    detail = raw.get("version_detail")
    version = _get(raw, "version") or (
        detail.get("version") if isinstance(detail, Mapping) else None
    )
    return ServerDocument(
        name=raw["name"],
        description=str(raw.get("description") or ""),
        version=_text(version),
        title=raw.get("title"),
        packages=tuple(
            Package.read(p) for p in raw.get("packages") or () if isinstance(p, Mapping)
        ),
        remotes=tuple(Remote.read(r) for r in raw.get("remotes") or () if isinstance(r, Mapping)),
        status=(official.get("status") if isinstance(official, Mapping) else None)
        or raw.get("status"),
    )
