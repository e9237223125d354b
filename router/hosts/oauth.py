"""A host's OAuth settings for one remote server, as the router's `oauth` section.

The router's section (`router/config/oauth.py`) reads Claude Code's keys as they are
(`clientId`, `callbackPort`, `authServerMetadataUrl`, `scopes` as one space-separated string)
and a few of its own. `carry` keeps each key the router knows, spelled as the router config
writes it (camelCase: `client_id` becomes `clientId`), and names every other key in a note
instead of carrying it. Values stay as written: a secret given as `${VAR}` stays a reference,
filled in where the router starts. A host that spells the section differently passes its own
names (Cursor's `auth` object: `CLIENT_ID`, `CLIENT_SECRET`, `scopes`).

`needs_sign_in` says which servers of a router config may ask for a sign-in that a person
gives once (`mcp-router auth login`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from router.config.oauth import may_carry_tokens

__all__ = ["EXPANDED", "KEYS", "NAMES", "carry", "fill_in", "needs_sign_in"]

KEYS = (
    "clientId",
    "clientSecret",
    "callbackPort",
    "scopes",
    "clientMetadataUrl",
    "authServerMetadataUrl",
    "tokenEndpointAuthMethod",
    "grant",
    "privateKey",
    "signingAlgorithm",
    "perUser",
    "tokenEndpoint",
    "audience",
)
"""The keys of the router's `oauth` section (`OAuthSettings`), as its config writes them."""
NAMES: Mapping[str, str] = {
    **{re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): key for key in KEYS},
    **{key: key for key in KEYS},
}
"""Each spelling the router reads (camelCase, snake_case) -> the key written."""
EXPANDED = frozenset({"clientId", "clientSecret", "privateKey"})
"""The keys in which the router expands `${VAR}`."""


def carry(
    section: Mapping[str, Any], where: str, names: Mapping[str, str] = NAMES
) -> tuple[dict[str, Any], list[str]]:
    """The router's `oauth` section for a host's (`where` is its key, for the notes), and a
    note naming what was left out."""
    carried: dict[str, Any] = {}
    unknown: list[str] = []
    twice: list[str] = []
    for key, value in section.items():
        meant = names.get(str(key))
        if meant is None:
            unknown.append(f"{where}.{key}")
        elif meant in carried:
            twice.append(f"{where}.{key}")
        else:
            carried[meant] = value
    notes = []
    if unknown:
        notes.append(f"left out: {', '.join(unknown)} (the router's oauth has no such setting)")
    if twice:
        notes.append(f"left out: {', '.join(twice)} (given already under another spelling)")
    return carried, notes


def fill_in(section: Mapping[str, Any], fix: Callable[[str, str], str]) -> dict[str, Any]:
    """The section with `fix(text, where)` applied to each string in it (`oauth.scopes[0]`)."""

    def fixed(value: Any, where: str) -> Any:
        if isinstance(value, str):
            return fix(value, where)
        if isinstance(value, list):
            return [fixed(item, f"{where}[{index}]") for index, item in enumerate(value)]
        return value

    return {name: fixed(value, f"oauth.{name}") for name, value in section.items()}


def needs_sign_in(entry: Mapping[str, Any]) -> bool:
    """Whether a router server entry may ask for a sign-in a person gives once: a remote one
    in use, with no `Authorization` header of its own, that the router may send tokens to,
    and not a machine-to-machine client (`grant: client_credentials` fetches its tokens)."""
    url = entry.get("url")
    if not isinstance(url, str) or entry.get("disabled") is True:
        return False
    headers = entry.get("headers") or {}
    if any(str(name).lower() == "authorization" for name in headers):
        return False
    oauth = entry.get("oauth") or {}
    if isinstance(oauth, Mapping) and oauth.get("grant") == "client_credentials":
        return False
    return may_carry_tokens(url)
