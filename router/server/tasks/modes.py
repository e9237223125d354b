"""Which calls may run as tasks: each tool's `TaskMode`, from the config.

A tool transform's `tasks` (the tool's own key over a glob's, as transforms merge) wins over
its server entry's `tasks`, which wins over `router.tasks.mode`. Keys match the upstream's
own tool name (`ToolRecord.called_as`), as transforms do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from router.config import RouterConfig
from router.config.shaping import TaskMode, is_glob


@dataclass(frozen=True, slots=True)
class TaskModes:
    """Each server's task mode and its tools' own, read at start."""

    default: TaskMode = "auto"
    servers: Mapping[str, TaskMode] = field(default_factory=dict)
    tools: Mapping[str, tuple[tuple[str, TaskMode], ...]] = field(default_factory=dict)
    """By server: (key, mode) of each transform that sets `tasks`, globs first."""

    @classmethod
    def from_config(cls, config: RouterConfig) -> TaskModes:
        servers = {n: e.tasks for n, e in config.servers.items() if e.tasks is not None}
        tools = {
            name: tuple(
                sorted(
                    ((key, t.tasks) for key, t in entry.tools.items() if t.tasks is not None),
                    key=lambda pair: not is_glob(pair[0]),
                )
            )
            for name, entry in config.servers.items()
        }
        return cls(config.router.tasks.mode, servers, {n: t for n, t in tools.items() if t})

    def mode_of(self, server: str, tool: str) -> TaskMode:
        """The mode of `server`'s tool `tool` (the upstream's own name)."""
        mode = self.servers.get(server, self.default)
        for key, own in self.tools.get(server, ()):
            if fnmatchcase(tool, key) if is_glob(key) else key == tool:
                mode = own
        return mode
