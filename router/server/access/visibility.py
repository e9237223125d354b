"""The current request's principal and the part of the catalog it may see.

The principal is what the front's `GuardMiddleware` verified (`router.http.oauth`); the SDK's
auth context carries it to every handler, the MCP ones (its dispatcher runs each message's
handler in the sender's context) and the REST ones alike. Without identities it is None.

Which catalog positions a view hides is computed once per snapshot and view, and kept for
the current snapshot only, for at most `MAX_VIEWS` views (a few profiles make few views).
On top of that, whatever the view, a per-user server's tools that the acting principal's own
connection does not list are hidden from it (`router.upstream.personal.own_tools`): they are
another principal's, read afresh at each request.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from mcp.server.auth.middleware.auth_context import get_access_token

from router.config import RouterConfig
from router.core.catalog import ToolRecord
from router.policy.profiles import EVERYTHING, OperatorRule, Principal, Profiles, View
from router.policy.rules import ToolPolicy
from router.server.access.endpoint import requested_endpoint
from router.server.listing.index import Snapshot
from router.upstream.personal.own_tools import OwnTools

if TYPE_CHECKING:  # loaded when `router.endpoints` names some
    from router.shaping.endpoints import EndpointFilter

MAX_VIEWS = 64
MAX_GROUPS = 256
"""The most groups read from one token: a principal is matched against these."""


def current_principal(groups_claim: str = "groups") -> Principal | None:
    """The principal of the request being handled, None without identities."""
    access = get_access_token()
    if access is None or access.subject is None:
        return None
    claims = access.claims or {}
    raw = claims.get(groups_claim, ())
    groups = raw.split() if isinstance(raw, str) else raw if isinstance(raw, list) else ()
    issuer = claims.get("iss")
    return Principal(
        subject=access.subject,
        groups=frozenset(str(g) for g in groups[:MAX_GROUPS]),
        issuer=str(issuer) if issuer is not None else None,
    )


class Visibility:
    """`router.profiles` applied to the current catalog."""

    def __init__(
        self,
        profiles: Profiles | None = None,
        groups_claim: str = "groups",
        *,
        operators: OperatorRule | None = None,
        identities: bool = False,
        endpoints: Mapping[str, EndpointFilter] | None = None,
        policy: ToolPolicy | None = None,
    ) -> None:
        self.profiles = profiles or Profiles({})
        self.policy = policy or ToolPolicy()
        """`router.policy`: tools it denies are ruled on by `authorize_call`; here it
        decides, with the rest, which servers' other surfaces a request sees."""
        self.endpoints = dict(endpoints or {})
        """`router.endpoints`, each narrowing the view of a request made at it."""
        self.groups_claim = groups_claim
        self.operators = operators or OperatorRule()
        self.identities = identities
        """Whether the front verifies identities (`router.http.oauth`)."""
        self.personal = OwnTools()
        """Which per-user servers' tools the acting principal is shown: none is per-user
        until the `RouterState` serving these settings binds it to its pool."""
        self._hidden: OrderedDict[tuple[int, View], frozenset[int]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: RouterConfig) -> Visibility:
        oauth = config.router.http.oauth
        return cls(
            Profiles(config.router.profiles),
            oauth.groups_claim if oauth else "groups",
            operators=OperatorRule(config.router.operators),
            identities=oauth is not None,
            endpoints=_endpoint_filters(config),
            policy=ToolPolicy.from_config(config),
        )

    def principal(self) -> Principal | None:
        return current_principal(self.groups_claim)

    def view(self) -> View:
        """The current request's view: its principal's profiles, at its endpoint."""
        view = self.profiles.view_for(self.principal()) if self.profiles else EVERYTHING
        endpoint = requested_endpoint()
        return view if endpoint is None else dataclasses.replace(view, endpoint=endpoint)

    def permits(self, view: View, record: ToolRecord) -> bool:
        """Whether `view` is shown `record` (listed, searched, suggested): what it may call,
        less another principal's tools of a per-user server."""
        if self.personal.hides(record.server, record.called_as):
            return False
        return self.permits_call(view, record)

    def permits_call(self, view: View, record: ToolRecord) -> bool:
        """Whether `view` may call `record`. A per-user server's tool is callable by a
        principal whose own connection has not listed it: its upstream checks the call
        against that listing once the connection is up (a first call signs the caller in)."""
        if view.endpoint is not None:
            found = self.endpoints.get(view.endpoint)
            if found is None or not found.permits(record):  # an endpoint gone: nothing
                return False
        return self.profiles.permits(view, record)

    def permits_server(self, view: View, server: str) -> bool:
        """The one rule for a server's resources, templates, prompts, completions,
        subscriptions and listen watches: `router.policy`, the endpoint (its `servers`,
        `tools` globs and policy) and the profiles must each leave the server open, the
        patterns read as they are for tools (`ToolPolicy.permits_server`)."""
        if not self.policy.permits_server(server):
            return False
        if view.endpoint is not None:
            found = self.endpoints.get(view.endpoint)
            if found is None or not found.permits_server(server):
                return False
        return self.profiles.permits_server(view, server)

    def is_operator(self, principal: Principal | None) -> bool:
        """An operator: one `router.operators` admits, or, on a router without identities
        (stdio, the shared token), whoever passed the front, since every such caller is
        the same trust already."""
        if not self.identities:
            return True
        return self.operators.admits(principal)

    def visible(self, view: View, records: Iterable[ToolRecord]) -> list[ToolRecord]:
        return [record for record in records if self.permits(view, record)]

    def hidden(self, snapshot: Snapshot, view: View) -> frozenset[int]:
        """The catalog positions `view` may not see (blocking at a large catalog's first
        ask: call it from a worker thread there)."""
        found = self._hidden_by(snapshot, view)
        catalog = snapshot.catalog
        others = [catalog.by_key(server, tool) for server, tool in self.personal.hidden()]
        positions = {catalog.position(r.qualified_name) for r in others if r is not None}
        return found | positions if positions else found

    def _hidden_by(self, snapshot: Snapshot, view: View) -> frozenset[int]:
        """What `view`'s profiles and endpoint hide, kept per snapshot and view."""
        if view.unrestricted:
            return frozenset()
        key = (snapshot.generation, view)
        with self._lock:
            found = self._hidden.get(key)
            if found is not None:
                self._hidden.move_to_end(key)
                return found
        found = frozenset(
            position
            for position, record in enumerate(snapshot.catalog.records)
            if not self.permits_call(view, record)  # the same for every principal of `view`
        )
        with self._lock:
            # only the current snapshot is asked about: older generations go
            for old in [k for k in self._hidden if k[0] != snapshot.generation]:
                del self._hidden[old]
            self._hidden[key] = found
            while len(self._hidden) > MAX_VIEWS:
                self._hidden.popitem(last=False)
        return found


def _endpoint_filters(config: RouterConfig) -> Mapping[str, EndpointFilter]:
    """`router.endpoints`' filters; `router.shaping` is imported only when there are some."""
    if not config.router.endpoints:
        return {}
    from router.shaping.endpoints import endpoint_filters

    return endpoint_filters(config)
