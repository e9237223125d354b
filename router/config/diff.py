"""What changed between the config a router serves and its file as it reads now, and which of
those changes a serving router applies at once (`router.server.lifecycle.reload` applies them).

Applied live: servers added (started, or indexed from their cached listing), removed
(stopped, their tools leave the index) and changed (just that upstream restarts; a change of
its timeouts only retimes it), and the `router` settings in `LIVE_SETTINGS` (of `limits`,
only `result_tokens`: `LIVE_PARTS`). Every other
`router` setting (the model, the mode, the cache folder, the store, the HTTP front and its
identities, learning, steps, tool pinning, reload itself) is read once at start: a change to
one is named as needing a restart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from router.config.settings import RouterConfig

__all__ = ["LIVE_SETTINGS", "ConfigDiff", "config_diff", "upstream_identity"]

LIVE_SETTINGS = frozenset(
    {
        "k",
        "names_after_k",
        "name_line_chars",
        "servers_summary_tokens",
        "pin",
        "policy",
        "profiles",
        "limits",
        "timeouts",
        "disabled",
        "include",
        "exclude",
        "start",
        "endpoints",
    }
)
"""`router` settings a serving router adopts as soon as it reads them."""
LIVE_PARTS = {"limits": frozenset({"result_tokens"})}
"""Of these sections only these keys are live; a change to another is named as needing a
restart, `limits.keep_seconds` say."""

_NOT_CONNECTION = {
    "timeouts",
    "prefix",
    "result_tokens",
    "confirm_destructive",
    "disabled",
    "start",
    "tools",
}
"""Entry fields an upstream's connection does not depend on: they apply without restarting it
(naming, limits and policy are the index's and the front's; timeouts are retimed)."""


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """The servers and settings that differ, by what applying them takes."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    """Enabled in both, with another command, URL, environment, filter or start setting."""
    retimed: tuple[str, ...] = ()
    """Enabled in both, only their effective timeouts differ."""
    settings: tuple[str, ...] = ()
    """`router` settings that changed and apply live."""
    need_restart: tuple[str, ...] = ()
    """`router` settings that changed but are read at start only."""
    entries: bool = False
    """Whether any server entry changed at all (naming, limits and policy are rebuilt)."""

    @property
    def empty(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.restarted
            or self.retimed
            or self.settings
            or self.need_restart
            or self.entries
        )

    def summary(self) -> str:
        """One line for the log: what was applied."""
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("restarted", self.restarted),
                ("retimed", self.retimed),
            )
            if names
        ]
        if self.settings:
            parts.append("router." + ", router.".join(self.settings) + " changed")
        return "; ".join(parts) or "server entries changed"


def upstream_identity(config: RouterConfig, name: str) -> str:
    """What one upstream's connection depends on: a different value restarts it."""
    entry = config.servers[name].model_dump(mode="json", exclude=_NOT_CONNECTION)
    router = config.router
    shape = [entry, config.start_for(name), router.include, router.exclude]
    return json.dumps(shape, sort_keys=True)


def config_diff(old: RouterConfig, new: RouterConfig) -> ConfigDiff:
    """How `new` differs from `old`, the config being served."""
    before, after = old.enabled_servers(), new.enabled_servers()
    common = [name for name in after if name in before]
    restarted = tuple(n for n in common if upstream_identity(old, n) != upstream_identity(new, n))
    retimed = tuple(
        n for n in common if n not in restarted and old.timeouts_for(n) != new.timeouts_for(n)
    )
    old_router = old.router.model_dump(mode="json")
    new_router = new.router.model_dump(mode="json")
    changed = [key for key in new_router if old_router.get(key) != new_router[key]]
    live = [key for key in changed if key in LIVE_SETTINGS]
    restart = [key for key in changed if key not in LIVE_SETTINGS]
    for key, keys in LIVE_PARTS.items():
        if key in changed:
            before, after = old_router[key], new_router[key]
            parts = [part for part in after if before.get(part) != after[part]]
            restart += [f"{key}.{part}" for part in parts if part not in keys]
            if not any(part in keys for part in parts):
                live.remove(key)
    return ConfigDiff(
        added=tuple(name for name in after if name not in before),
        removed=tuple(name for name in before if name not in after),
        restarted=restarted,
        retimed=retimed,
        settings=tuple(live),
        need_restart=tuple(restart),
        entries=_entries(old) != _entries(new),
    )


def _entries(config: RouterConfig) -> str:
    dumped = {name: server.model_dump(mode="json") for name, server in config.servers.items()}
    return json.dumps(dumped, sort_keys=True)
