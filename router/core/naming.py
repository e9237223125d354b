"""Qualified tool names that every LLM API accepts: `^[a-zA-Z0-9_-]{1,64}$`.

A tool is exposed as `{server}__{tool}`, or as `{tool}` alone for a server configured with
`"prefix": false`. Characters outside the allowed set become `_`, names over 64 characters
are cut and given a hash suffix, and two tools that would end up with one name are told
apart by a hash of their original identity. An unprefixed tool whose name is already taken
(by a prefixed tool, a name the router lists itself, or the same name on an unprefixed server
earlier in name order) is a configuration clash: it keeps its qualified name instead and the
clash is reported. Everything is a pure function of the input, so the same catalog always
gets the same names.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_NAME_LENGTH = 64
SEPARATOR = "__"
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8


@dataclass(frozen=True, slots=True)
class NameCollision:
    """Several tools whose sanitised names were equal, and the names each one got."""

    sanitised: str
    members: tuple[tuple[str, str, str], ...]  # (server, tool, assigned qualified name)


ROUTER = "mcp-router"
"""The holder a `NameClash` names when the router itself lists the name (a meta-tool)."""


@dataclass(frozen=True, slots=True)
class NameClash:
    """An unprefixed tool whose name `holder` already has: it is listed as `assigned`."""

    name: str
    holder: str
    """The server that keeps `name`, or `ROUTER` for a name the router lists itself."""
    server: str
    tool: str
    assigned: str

    def describe(self, kind: str = "tool") -> str:
        """The clash as a configuration error: both servers, what each gets, the fix."""
        if self.holder == ROUTER:
            held = f"the router lists '{self.name}' itself"
            fix = f'set "prefix": true on mcpServers.{self.server}'
        else:
            held = (
                f"servers '{self.holder}' and '{self.server}' both list a {kind} named "
                f"'{self.name}'; '{self.holder}' keeps the name"
            )
            fix = f'set "prefix": true on mcpServers.{self.holder} or mcpServers.{self.server}'
        return (
            f"{kind} name clash: {held}, and '{self.server}'s {kind} is listed as "
            f"'{self.assigned}'. Fix: {fix}, or exclude the {kind} on one of them."
        )


@dataclass(frozen=True, slots=True)
class NameRules:
    """How names are made beyond the default `{server}__{tool}`."""

    unprefixed: frozenset[str] = frozenset()
    """Servers whose tools keep their own names (config `"prefix": false`)."""
    reserved: frozenset[str] = frozenset()
    """Names the router lists itself (the meta-tools), which no unprefixed tool may take."""


@dataclass(frozen=True, slots=True)
class Naming:
    """The names given to a list of tools, and what had to be resolved to give them."""

    names: list[str]
    collisions: list[NameCollision] = field(default_factory=list)
    clashes: list[NameClash] = field(default_factory=list)


def _short_hash(*parts: str) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return digest[:_HASH_LENGTH]


def _fit(name: str, server: str, tool: str) -> str:
    """Cut `name` to the length limit, keeping it unique through a hash of the original."""
    if len(name) <= MAX_NAME_LENGTH:
        return name
    suffix = "-" + _short_hash(server, tool)
    return name[: MAX_NAME_LENGTH - len(suffix)] + suffix


def sanitise(text: str) -> str:
    """Replace every character a strict LLM API would refuse with `_`."""
    cleaned = _INVALID_CHARS.sub("_", text)
    return cleaned or "_"


def qualify(server: str, tool: str) -> str:
    """The qualified name of one tool, before collisions with other tools are resolved."""
    return _fit(sanitise(server) + SEPARATOR + sanitise(tool), server, tool)


def bare(server: str, tool: str) -> str:
    """The name of an unprefixed server's tool: its own, made valid like a qualified one."""
    return _fit(sanitise(tool), server, tool)


def assign_qualified_names(
    keys: Sequence[tuple[str, str]],
) -> tuple[list[str], list[NameCollision]]:
    """Give each `(server, tool)` a unique valid qualified name (`assign_names` without
    rules): the names in input order and one record per collision group."""
    naming = assign_names(keys)
    return naming.names, naming.collisions


def assign_names(keys: Sequence[tuple[str, str]], rules: NameRules | None = None) -> Naming:
    """Give each `(server, tool)` a unique valid name.

    An unprefixed server's tool wants its own name; prefixed names and reserved names hold
    theirs, and among unprefixed servers the first in name order does; a tool that loses
    its name to another is listed under its qualified name, and the clash is reported.
    Then, within a group of tools whose names are still equal (characters replaced, names
    cut), the tool whose original text needed no change keeps the plain name (else the
    first in sorted order does); the others get a hash suffix, so nothing is dropped.
    """
    rules = rules or NameRules()
    unprefixed = rules.unprefixed
    wanted = [
        bare(server, tool) if server in unprefixed else qualify(server, tool)
        for server, tool in keys
    ]
    holders = dict.fromkeys(rules.reserved, ROUTER)
    for (server, _), name in zip(keys, wanted, strict=True):
        if server not in unprefixed:
            holders.setdefault(name, server)
    moved: list[tuple[int, str, str]] = []  # (index, wanted name, holder)
    for index in sorted(range(len(keys)), key=lambda i: keys[i]):
        server, tool = keys[index]
        if server not in unprefixed:
            continue
        holder = holders.setdefault(wanted[index], server)
        if holder != server:
            moved.append((index, wanted[index], holder))
            wanted[index] = qualify(server, tool)
    names, collisions = _resolve_collisions(keys, wanted, unprefixed)
    clashes = [
        NameClash(name, holder, keys[i][0], keys[i][1], names[i]) for i, name, holder in moved
    ]
    return Naming(names, collisions, clashes)


def _resolve_collisions(
    keys: Sequence[tuple[str, str]], candidates: list[str], unprefixed: frozenset[str]
) -> tuple[list[str], list[NameCollision]]:
    by_name: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(candidates):
        by_name[name].append(index)

    assigned = list(candidates)
    taken = set(candidates)
    collisions: list[NameCollision] = []
    for name, indices in sorted(by_name.items()):
        distinct = {keys[i] for i in indices}
        if len(distinct) < 2:
            continue
        order = sorted(
            indices, key=lambda i: (not _is_verbatim(keys[i], name, unprefixed), keys[i])
        )
        keeper_key = keys[order[0]]
        for i in order:
            if keys[i] == keeper_key:
                continue
            assigned[i] = _unique_variant(name, keys[i], taken)
            taken.add(assigned[i])
        members = tuple(sorted((keys[i][0], keys[i][1], assigned[i]) for i in indices))
        collisions.append(NameCollision(sanitised=name, members=tuple(dict.fromkeys(members))))
    return assigned, collisions


def _is_verbatim(key: tuple[str, str], name: str, unprefixed: frozenset[str]) -> bool:
    return name in (key[0] + SEPARATOR + key[1], key[1] if key[0] in unprefixed else None)


def _unique_variant(name: str, key: tuple[str, str], taken: set[str]) -> str:
    salt = 0
    while True:
        suffix = "-" + _short_hash(key[0], key[1], str(salt))
        candidate = name[: MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        salt += 1
