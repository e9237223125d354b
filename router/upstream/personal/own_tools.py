"""Which of the per-user servers' indexed tools the acting principal is shown.

The index holds a per-user server's tools once: every tool a connection open in this process
listed, and `sign_in`. Each principal is shown only what its own connection lists, and
`sign_in` (`PersonalUpstream.own_tools`): `Visibility` (`router.server.access.visibility`)
asks here for every listing, search, suggestion and call, so bob never sees the name of a
tool that only alice's connection lists.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from router.upstream.upstream import Upstream

if TYPE_CHECKING:
    from router.upstream.personal.upstream import PersonalUpstream


def _personal_type() -> type[PersonalUpstream] | None:
    """`PersonalUpstream`, once loaded: before the pool makes a per-user upstream its module
    is not imported (`router.upstream.per_user`), and then no upstream is one."""
    module = sys.modules.get("router.upstream.personal.upstream")
    return None if module is None else cast("type[PersonalUpstream]", module.PersonalUpstream)


class OwnTools:
    """The per-user upstreams of the pool, read for the acting principal (safe to read
    from a worker thread: it only looks things up)."""

    def __init__(self) -> None:
        self._upstreams: Mapping[str, Upstream] = {}

    def serve(self, upstreams: Mapping[str, Upstream]) -> None:
        """Read `upstreams` (the pool's, once it is up; a reload changes it in place)."""
        self._upstreams = upstreams

    def hides(self, server: str, tool: str) -> bool:
        """Whether `server`'s tool `tool` (its upstream name) is another principal's."""
        personal = _personal_type()
        if personal is None:
            return False
        upstream = self._upstreams.get(server)
        return isinstance(upstream, personal) and tool not in upstream.own_tools()

    def hidden(self) -> list[tuple[str, str]]:
        """Every (server, tool) of the per-user servers that the acting principal is not
        shown."""
        found: list[tuple[str, str]] = []
        personal = _personal_type()
        if personal is None:
            return found
        for server, upstream in tuple(self._upstreams.items()):
            if isinstance(upstream, personal):
                own = upstream.own_tools()
                found.extend((server, t.name) for t in upstream.tools if t.name not in own)
        return found
