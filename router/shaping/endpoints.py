"""Virtual endpoints (`router.endpoints`): which tools and servers each named endpoint
serves, as one filter over the one catalog.

An endpoint never owns data: the front looks its name up per request (the path `/mcp/NAME`,
`?endpoint=NAME`, `serve --endpoint NAME`), and the view of that request is the caller's
profile view narrowed by the endpoint's filter (`router.server.access.visibility`): a tool
must pass both, so the stricter wins. Its own policy narrows `router.policy` the same way
(`ToolPolicy.narrowed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from router.config import RouterConfig
from router.config.shaping import Endpoint
from router.core.catalog import ToolRecord
from router.core.tool_patterns import matches, names_server
from router.policy.rules import ToolPolicy

__all__ = ["EndpointFilter", "endpoint_filters"]


@dataclass(frozen=True, slots=True)
class EndpointFilter:
    """What one endpoint serves: its servers (None: every one), its tool globs (empty:
    every tool of those servers) and the policy it adds (a tool it denies is not served)."""

    name: str
    servers: frozenset[str] | None
    tools: tuple[str, ...]
    policy: ToolPolicy

    @classmethod
    def of(cls, name: str, endpoint: Endpoint) -> EndpointFilter:
        return cls(
            name=name,
            servers=frozenset(endpoint.servers) if endpoint.servers else None,
            tools=tuple(endpoint.tools),
            policy=endpoint_policy(name, endpoint),
        )

    def serves(self, server: str) -> bool:
        """Whether the server is one of the endpoint's `servers`."""
        return self.servers is None or server in self.servers

    def permits_server(self, server: str) -> bool:
        """Whether the endpoint serves the server's resources, templates, prompts and
        completions: it is one of its `servers`, one of its `tools` globs (when it has
        any) names the server, and its policy leaves the server open
        (`ToolPolicy.permits_server`). An endpoint that serves none of a server's tools
        serves nothing else of it."""
        if not self.serves(server) or not self.policy.permits_server(server):
            return False
        return not self.tools or any(names_server(pattern, server) for pattern in self.tools)

    def permits(self, record: ToolRecord) -> bool:
        if not self.serves(record.server):
            return False
        if self.tools and not any(matches(record, pattern) for pattern in self.tools):
            return False
        return not self.policy.denies(record)


def endpoint_policy(name: str, endpoint: Endpoint) -> ToolPolicy:
    """The rules an endpoint adds, named as a user finds them in the file."""
    policy = endpoint.policy
    return ToolPolicy(
        allow=tuple(policy.allow),
        deny=tuple(policy.deny),
        confirm=tuple(policy.confirm),
        where=f"router.endpoints.{name}.policy",
    )


def endpoint_filters(config: RouterConfig) -> Mapping[str, EndpointFilter]:
    return {name: EndpointFilter.of(name, e) for name, e in config.router.endpoints.items()}
