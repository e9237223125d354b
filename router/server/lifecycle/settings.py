"""The settings of one config, as the handlers read them: built once, never changed.

`RouterState.settings` holds the `Settings` of the config being served. A config applied
while serving (`router.server.lifecycle.reload`) builds a new one and swaps it in with one
assignment,
so a request reads either the old settings or the new ones, never half of each, and nothing
copies a setting anywhere to be kept in step by hand. What lives longer than one config (the
index, the upstream pool, held calls, kept results, metrics) stays on the state.

`authorize_call` is where a call to a tool is ruled on, against the settings in force at the
moment of the call: a tool the current policy denies or the caller's profile hides is refused
from the moment its config is adopted, not only once the index has been rebuilt without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from router.config import DEFAULT_RESULT_TOKENS, RouterConfig, name_rules
from router.config.defaults import (
    DEFAULT_NAME_LINE_CHARS,
    DEFAULT_NAMES_AFTER_K,
    DEFAULT_SUMMARY_TOKENS,
)
from router.config.diff import LIVE_PARTS, LIVE_SETTINGS
from router.config.quotas import Quota
from router.core.catalog import ToolRecord
from router.core.errors import ToolDenied, ToolNotFound
from router.core.naming import NameRules
from router.policy.profiles import EVERYTHING, Principal, View
from router.policy.rules import Ruling, ToolPolicy, Verdict
from router.server.access.visibility import Visibility

if TYPE_CHECKING:  # loaded when a server entry has a `tools` section
    from router.shaping.transforms import Transforms

Mode = Literal["search", "dynamic", "all", "code"]


@dataclass(frozen=True, slots=True, eq=False)
class Settings:
    """What the handlers read of one config (`RouterConfig`), frozen."""

    k: int = 5
    names_after_k: int = DEFAULT_NAMES_AFTER_K
    """`router.names_after_k`: the tools past the top k a search answer names."""
    name_line_chars: int = DEFAULT_NAME_LINE_CHARS
    servers_summary_tokens: int = DEFAULT_SUMMARY_TOKENS
    """`router.servers_summary_tokens`: the budget of the servers' directory."""
    mode: Mode = "search"
    """Read at start only: a reload keeps the mode the router started in (`served`)."""
    always_load: bool = True
    """`router.always_load`: the listing marks the meta-tools and pins keep-loaded."""
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    """`router.policy` and the servers' `confirm_destructive`."""
    visibility: Visibility = field(default_factory=Visibility)
    """`router.profiles`: what the current request's principal may list, search and call."""
    pins: tuple[str, ...] = ()
    names: NameRules = field(default_factory=NameRules)
    """How the catalog names tools (`router.config.name_rules`)."""
    result_tokens: Mapping[str, int] = field(default_factory=dict)
    """Each enabled server's result limit in tokens, 0 for none."""
    default_result_tokens: int = DEFAULT_RESULT_TOKENS
    """`router.limits.result_tokens`: the limit of a server not (or no longer) configured."""
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    """`router.quotas`, by profile name (`router.server.calls.stages.meter`)."""
    transforms: Transforms | None = None
    """The server entries' `tools` sections (`router.shaping.transforms`); None for none."""
    endpoint: str | None = None
    """The endpoint (`router.endpoints`) these settings are of; None: the router's own."""
    endpoints: Mapping[str, Settings] = field(default_factory=dict)
    """Each endpoint's settings, by name: its mode, k, pins and policy over these."""

    @classmethod
    def _own(cls, config: RouterConfig) -> Settings:
        router = config.router
        return cls(
            k=router.k,
            names_after_k=router.names_after_k,
            name_line_chars=router.name_line_chars,
            servers_summary_tokens=router.servers_summary_tokens,
            mode=router.mode,
            always_load=router.always_load,
            policy=ToolPolicy.from_config(config),
            visibility=Visibility.from_config(config),
            pins=tuple(str(pin) for pin in router.pin),
            names=name_rules(config),
            result_tokens={name: config.result_tokens_for(name) for name in config.servers},
            default_result_tokens=router.limits.result_tokens,
            quotas=dict(router.quotas),
            transforms=_transforms(config),
        )

    @classmethod
    def from_config(cls, config: RouterConfig) -> Settings:
        base = cls._own(config)
        if not config.router.endpoints:
            return base
        from router.shaping.endpoints import endpoint_policy  # configured endpoints only

        endpoints = {
            name: dataclasses.replace(
                base,
                endpoint=name,
                k=endpoint.k if endpoint.k is not None else base.k,
                mode=endpoint.mode if endpoint.mode is not None else base.mode,
                pins=tuple(endpoint.pin) if endpoint.pin is not None else base.pins,
                policy=base.policy.narrowed(endpoint_policy(name, endpoint)),
            )
            for name, endpoint in config.router.endpoints.items()
        }
        return dataclasses.replace(base, endpoints=endpoints)

    def result_tokens_for(self, server: str) -> int:
        """A server's result limit in tokens, 0 for none; a server a reload removed while
        its call was in flight gets the router-wide one."""
        return self.result_tokens.get(server, self.default_result_tokens)


def _transforms(config: RouterConfig) -> Transforms | None:
    """The servers' `tools` sections (`router.shaping.transforms`), or None without any."""
    if not any(entry.tools for entry in config.servers.values()):
        return None
    from router.shaping.transforms import Transforms

    return Transforms.from_config(config)


def served(started: RouterConfig, new: RouterConfig) -> RouterConfig:
    """`new` as a serving router adopts it: each `router` setting read only at start
    (not in `router.config.diff.LIVE_SETTINGS`) keeps its value in `started`."""
    kept = {
        key: getattr(started.router, key)
        for key in type(new.router).model_fields
        if key not in LIVE_SETTINGS
    }
    for key, live in LIVE_PARTS.items():
        section = getattr(new.router, key)
        running = getattr(started.router, key)
        kept[key] = running.model_copy(update={part: getattr(section, part) for part in live})
    return new.model_copy(update={"router": new.router.model_copy(update=kept)})


def authorize_call(settings: Settings, view: View, record: ToolRecord) -> Ruling:
    """Whether the caller whose profile view is `view` may call `record` under `settings`:
    the policy's ruling (allowed, or to be confirmed first), or the refusal.

    Raises:
        ToolNotFound: The view does not see the tool: for this caller it does not exist.
        ToolDenied: `router.policy` denies it (naming the rule).
    """
    if not settings.visibility.permits_call(view, record):
        raise ToolNotFound(record.qualified_name)
    ruling = settings.policy.rule_for(record)
    if ruling.verdict is Verdict.DENY:
        raise ToolDenied(record.qualified_name, ruling.rule)
    return ruling


def view_of(settings: Settings, principal: Principal | None) -> View:
    """`principal`'s view under `settings`' profiles (the request's principal is the
    authorization layer's `Access.principal`)."""
    profiles = settings.visibility.profiles
    return profiles.view_for(principal) if profiles else EVERYTHING
