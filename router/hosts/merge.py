"""Servers from several host files merged into one router config: each server once, every
name distinct, and nothing left out without saying so.

- The same server (the same `command`, `args`, `env` and `cwd`, or the same `url` and
  `headers`) found again, under any name, is kept once: the first one found.
- A different server under a name already taken gets the host's id added: `github` from
  Cursor becomes `github-cursor` (then `github-cursor-2`, ...).
- An entry the router would refuse (a URL that is not http(s), a bad `args` value) is
  reported with the router's own error and left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from router.config import parse_config
from router.config.shaping import ENDPOINT_NAME
from router.core.errors import ConfigError
from router.hosts.entries import ROUTER_CONFIG_LABEL, Found, identity

__all__ = ["EVERY_VARIABLE", "Merged", "Outcome", "merge"]


class _EveryVariable(Mapping[str, str]):
    """An environment in which every variable is set: `${VAR}` placeholders are checked for
    syntax at import time, and filled in where the router starts."""

    def __getitem__(self, key: str) -> str:
        return "set"

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


EVERY_VARIABLE: Mapping[str, str] = _EveryVariable()


@dataclass(frozen=True)
class Outcome:
    """What became of one server found."""

    found: Found
    kind: Literal["added", "renamed", "duplicate", "invalid"]
    name: str
    """Its name in the router config; for a duplicate, the name of the one kept."""
    other: Found | None = None
    """renamed: the server that has the name; duplicate: the one kept."""
    reason: str = ""
    """invalid: the router's objection."""


@dataclass
class Merged:
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)

    def outcome(self, found: Found) -> Outcome:
        return next(outcome for outcome in self.outcomes if outcome.found is found)


def merge(found: Iterable[Found]) -> Merged:
    """The router's servers from everything found, in the order found."""
    merged = Merged()
    origin: dict[str, Found] = {}
    by_identity: dict[tuple[Any, ...], str] = {}
    for item in found:
        problem = _router_objection(item.entry)
        if problem is not None:
            merged.outcomes.append(Outcome(item, "invalid", item.name, reason=problem))
            continue
        key = identity(item.entry)
        if key in by_identity:
            kept = by_identity[key]
            merged.outcomes.append(Outcome(item, "duplicate", kept, origin[kept]))
            continue
        name = _clean(item.name)
        if name in merged.servers:
            other = origin[name]
            name = free_name(f"{name}-{item.host}", merged.servers)
            merged.outcomes.append(Outcome(item, "renamed", name, other))
        else:
            kind: Literal["added", "renamed"] = "added" if name == item.name else "renamed"
            merged.outcomes.append(Outcome(item, kind, name))
        merged.servers[name] = item.entry
        origin[name] = item
        by_identity[key] = name
    return merged


def _clean(name: str) -> str:
    """A name the router accepts: no spaces or `/`."""
    return re.sub(r"[\s/]+", "-", name.strip()).strip("-") or "server"


def free_name(name: str, taken: Mapping[str, Any]) -> str:
    """`name`, or `name-2`, `name-3`, ...: the first that `taken` does not hold."""
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}-{number}", number + 1
    return candidate


def _router_objection(entry: dict[str, Any]) -> str | None:
    """The router's own error for this entry, if it would refuse it."""
    try:
        parse_config({"mcpServers": {"server": entry}}, environ=EVERY_VARIABLE)
    except ConfigError as exc:
        lines = [
            line.split("mcpServers.server", 1)[-1].lstrip(".: ") for line in str(exc).splitlines()
        ]
        return "; ".join(lines)
    return None


def host_endpoints(merged: Merged) -> dict[str, dict[str, Any]]:
    """One endpoint per host the servers came from, each with that host's servers under
    their names in the router config (a server two hosts share is in both)."""
    endpoints: dict[str, dict[str, Any]] = {}
    for outcome in merged.outcomes:
        found = outcome.found
        if outcome.kind == "invalid" or found.label == ROUTER_CONFIG_LABEL:
            continue  # a router config's servers belong to no host: its endpoints are kept
        host = found.host if found.host != "file" else Path(found.where).stem
        name = "".join(ch if ch.isalnum() or ch in "_-" else "-" for ch in host).strip("-_")
        if not re.match(ENDPOINT_NAME, name):
            name = f"host-{name}"[:64]
        servers = endpoints.setdefault(name, {"servers": []})["servers"]
        if outcome.name not in servers:
            servers.append(outcome.name)
    return endpoints


def config_text(
    merged: Merged,
    router: dict[str, Any] | None,
    endpoints: dict[str, dict[str, Any]] | None,
    source: Path | None,
) -> str:
    """The router config `import` writes: the merged servers, the `router` section of the
    file it replaces (kept, so settings survive a re-import), with the hosts' endpoints
    replacing theirs and every other endpoint kept; checked as `serve` would read it."""
    document: dict[str, Any] = {"mcpServers": merged.servers}
    if router is not None:
        document["router"] = router
    if endpoints:
        section = document.setdefault("router", {})
        section["endpoints"] = {**section.get("endpoints", {}), **endpoints}
    parse_config(document, source=source, environ=EVERY_VARIABLE)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
