"""Who may see which tools: a request's `Principal` and the `router.profiles` that apply to it.

A principal is matched by profiles naming its `sub` or one of its groups (`*` matches any
principal). A principal no profile matches gets the `default` profile, if there is one, and
otherwise sees no tool at all: once profiles are configured, every identity needs one. A
request without identities (stdio, the shared token) gets `default`, or sees everything
`router.policy` allows when there is none. Within a profile `deny` wins, then a non-empty
`allow` must name the tool; the tools of several matching profiles add up. A tool outside
the caller's view does not exist for that caller: not listed, searched, suggested or called.

Profiles name servers too: a server's resources, prompts and completions are the caller's
when its profile may see the server (`permits_server`): no `deny` pattern covers the whole
server (`server`, `server/*`, `server__*`), and an `allow`, when there is one, names the
server (its `server/...` part, a bare server name, or `*`). A bare server name in `allow` or
`deny` also covers every tool of that server.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass

from router.config.identity import DEFAULT_PROFILE, Operators, Profile
from router.core.catalog import ToolRecord
from router.core.tool_patterns import matches

ANYONE = "*"


@dataclass(frozen=True, slots=True)
class Principal:
    """The identity behind a request at the HTTP front (`router.http.oauth`)."""

    subject: str
    groups: frozenset[str] = frozenset()
    issuer: str | None = None

    @property
    def key(self) -> str:
        """Stable across sessions and replicas; `sub` is unique only per issuer."""
        return f"{self.issuer or ''}\x1f{self.subject}"


@dataclass(frozen=True, slots=True)
class View:
    """The profiles that decide what one caller sees; `None` profiles: everything."""

    profiles: tuple[str, ...] | None
    """Names of the matching profiles, sorted; () sees nothing, None everything."""
    endpoint: str | None = None
    """The endpoint the request came in at (`router.endpoints`), which narrows the view
    further; None: the router itself."""

    @property
    def unrestricted(self) -> bool:
        return self.profiles is None and self.endpoint is None


EVERYTHING = View(None)
NOTHING = View(())


class Profiles:
    """`router.profiles`, ready to rule on principals and tools."""

    def __init__(self, profiles: Mapping[str, Profile]) -> None:
        self._profiles = dict(profiles)

    def __bool__(self) -> bool:
        return bool(self._profiles)

    def view_for(self, principal: Principal | None) -> View:
        if not self._profiles:
            return EVERYTHING
        if principal is None:
            return View((DEFAULT_PROFILE,)) if DEFAULT_PROFILE in self._profiles else EVERYTHING
        names = tuple(
            sorted(
                name
                for name, profile in self._profiles.items()
                if name != DEFAULT_PROFILE and _applies(profile, principal)
            )
        )
        if names:
            return View(names)
        return View((DEFAULT_PROFILE,)) if DEFAULT_PROFILE in self._profiles else NOTHING

    def permits(self, view: View, record: ToolRecord) -> bool:
        if view.profiles is None:
            return True
        return any(_permits(self._profiles[name], record) for name in view.profiles)

    def permits_server(self, view: View, server: str) -> bool:
        """Whether `view` may see the server's resources, prompts and completions."""
        if view.profiles is None:
            return True
        return any(_permits_server(self._profiles[name], server) for name in view.profiles)


class OperatorRule:
    """`router.operators`: who may approve held tools and read the operator surfaces."""

    def __init__(self, operators: Operators | None = None) -> None:
        operators = operators or Operators()
        self._subjects = frozenset(operators.subjects)
        self._groups = frozenset(operators.groups)

    def admits(self, principal: Principal | None) -> bool:
        """An identity in the configured subjects or groups; never an anonymous request
        (a request without identities is the one local user only on stdio, where the
        caller decides that itself)."""
        if principal is None:
            return False
        return principal.subject in self._subjects or not principal.groups.isdisjoint(self._groups)


def _applies(profile: Profile, principal: Principal) -> bool:
    if ANYONE in profile.subjects or principal.subject in profile.subjects:
        return True
    return ANYONE in profile.groups or not principal.groups.isdisjoint(profile.groups)


def _names(pattern: str, record: ToolRecord) -> bool:
    return matches(record, pattern) or _whole_server(pattern, record.server)


def _permits(profile: Profile, record: ToolRecord) -> bool:
    if any(_names(pattern, record) for pattern in profile.deny):
        return False
    return not profile.allow or any(_names(pattern, record) for pattern in profile.allow)


def _whole_server(pattern: str, server: str) -> bool:
    """Whether `pattern` names every tool of `server` (`server`, `server/*`, `server__*`)."""
    if "/" in pattern:
        head, _, tool = pattern.partition("/")
        return tool == "*" and fnmatch.fnmatchcase(server, head)
    if pattern.endswith("__*"):
        return fnmatch.fnmatchcase(server, pattern[:-3])
    return "__" not in pattern and fnmatch.fnmatchcase(server, pattern)


def _server_named(pattern: str, server: str) -> bool:
    """Whether `pattern` names some tool of `server` (so its server is seen)."""
    if "/" in pattern:
        return fnmatch.fnmatchcase(server, pattern.partition("/")[0])
    if "__" in pattern:
        return fnmatch.fnmatchcase(server, pattern.partition("__")[0])
    return fnmatch.fnmatchcase(server, pattern)


def _permits_server(profile: Profile, server: str) -> bool:
    if any(_whole_server(pattern, server) for pattern in profile.deny):
        return False
    return not profile.allow or any(_server_named(pattern, server) for pattern in profile.allow)
