"""A pool's per-user upstream parts (`router.upstream.personal`), made on first need: a config
without a per-user upstream, on a front nobody signs in at, never imports them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from router.config import RemoteServer, RouterConfig, StdioServer
from router.store.records import Records
from router.upstream.state import UpstreamStatus
from router.upstream.upstream import ToolsChanged

if TYPE_CHECKING:
    from router.upstream.personal.accounts import PersonalAccounts
    from router.upstream.personal.building import PersonalBuilder
    from router.upstream.personal.pending import PendingSignIns
    from router.upstream.personal.upstream import PersonalUpstream

Hooks = tuple[ToolsChanged | None, Callable[[UpstreamStatus], None] | None]
"""What the pool is told of an upstream: its tools changed, its status changed."""


class PerUser:
    """The sign-ins waiting for the front's callback and the builder of per-user upstreams."""

    def __init__(self, credentials: Records | None, sign_ins: PendingSignIns | None) -> None:
        self._credentials = credentials
        self._sign_ins = sign_ins
        self._builder: PersonalBuilder | None = None

    @property
    def sign_ins(self) -> PendingSignIns:
        if self._sign_ins is None:
            from router.upstream.personal.pending import PendingSignIns

            self._sign_ins = PendingSignIns(self._credentials)
        return self._sign_ins

    @property
    def builder(self) -> PersonalBuilder:
        if self._builder is None:
            from router.upstream.personal.building import PersonalBuilder

            self._builder = PersonalBuilder(self.sign_ins, self._credentials)
        return self._builder

    def build(
        self,
        config: RouterConfig,
        name: str,
        server: StdioServer | RemoteServer,
        options: dict[str, Any],
        hooks: Hooks,
    ) -> PersonalUpstream:
        """The per-user upstream `name` (`PersonalBuilder.build`)."""
        on_tools, on_status_changed = hooks
        return self.builder.build(
            config, name, server, options, on_tools=on_tools, on_status_changed=on_status_changed
        )

    def accounts(self, config: RouterConfig) -> PersonalAccounts:
        """Principals' standing with `config`'s per-user upstreams."""
        from router.upstream.personal.accounts import PersonalAccounts

        return PersonalAccounts(config, self._credentials)
