"""Which of the per-user servers' indexed tools the acting principal is shown.

The index holds a per-user server's tools once: every tool a connection open in this process
listed, and `sign_in`. Each principal is shown only what its own connection lists, and
`sign_in` (`PersonalUpstream.own_tools`): `Visibility` (`router.server.access.visibility`)
asks here for every listing, search, suggestion and call, so bob never sees the name of a
tool that only alice's connection lists.
"""

from __future__ import annotations

from collections.abc import Mapping

from router.upstream.personal.upstream import PersonalUpstream
from router.upstream.upstream import Upstream


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
        upstream = self._upstreams.get(server)
        return isinstance(upstream, PersonalUpstream) and tool not in upstream.own_tools()

    def hidden(self) -> list[tuple[str, str]]:
        """Every (server, tool) of the per-user servers that the acting principal is not
        shown."""
        found: list[tuple[str, str]] = []
        for server, upstream in tuple(self._upstreams.items()):
            if isinstance(upstream, PersonalUpstream):
                own = upstream.own_tools()
                found.extend((server, t.name) for t in upstream.tools if t.name not in own)
        return found
