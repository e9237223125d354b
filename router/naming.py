"""Qualified tool names that every LLM API accepts: `^[a-zA-Z0-9_-]{1,64}$`.

A tool is exposed as `{server}__{tool}`. Characters outside the allowed set become `_`,
names over 64 characters are cut and given a hash suffix, and two tools that would end
up with one name are told apart by a hash of their original identity. Everything is a
pure function of the input, so the same catalog always gets the same names.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

MAX_NAME_LENGTH = 64
SEPARATOR = "__"
VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8


@dataclass(frozen=True, slots=True)
class NameCollision:
    """Several tools whose sanitised names were equal, and the names each one got."""

    sanitised: str
    members: tuple[tuple[str, str, str], ...]  # (server, tool, assigned qualified name)


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


def assign_qualified_names(
    keys: Sequence[tuple[str, str]],
) -> tuple[list[str], list[NameCollision]]:
    """Give each `(server, tool)` a unique valid qualified name.

    Returns the names in input order and one record per collision group. Within a group the
    tool whose original text needed no change keeps the plain name (else the first in sorted
    order does); the others get a hash suffix, so nothing is dropped.
    """
    candidates = [qualify(server, tool) for server, tool in keys]
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
        order = sorted(indices, key=lambda i: (not _is_verbatim(keys[i], name), keys[i]))
        keeper_key = keys[order[0]]
        for i in order:
            if keys[i] == keeper_key:
                continue
            assigned[i] = _unique_variant(name, keys[i], taken)
            taken.add(assigned[i])
        members = tuple(sorted((keys[i][0], keys[i][1], assigned[i]) for i in indices))
        collisions.append(NameCollision(sanitised=name, members=tuple(dict.fromkeys(members))))
    return assigned, collisions


def _is_verbatim(key: tuple[str, str], name: str) -> bool:
    return key[0] + SEPARATOR + key[1] == name


def _unique_variant(name: str, key: tuple[str, str], taken: set[str]) -> str:
    salt = 0
    while True:
        suffix = "-" + _short_hash(key[0], key[1], str(salt))
        candidate = name[: MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        salt += 1
