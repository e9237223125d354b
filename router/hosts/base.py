"""What every host file format shares: where its servers are, how it reads and is rewritten.

A `FileFormat` reads one kind of file (Claude Desktop's, Cursor's `mcp.json`, ...) into
`Found` servers in the router's shape, and for `--install` rewrites it so that its servers
are exactly one entry starting the router, changing nothing else in the file.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from router.core.errors import ConfigError
from router.hosts import jsonc
from router.hosts.entries import (
    FileRead,
    Found,
    RouterEntry,
    Skipped,
    Unconvertible,
    Variables,
    convert,
    launches_router,
    served_config,
)

__all__ = ["ROUTER_ENTRY_NAME", "FileFormat", "KeyPath", "Places"]

ROUTER_ENTRY_NAME = "mcp-router"
"""The name of the one entry `--install` leaves in a host's config."""

KeyPath = tuple[str, ...]
Syntax = Literal["json", "jsonc", "toml"]

_SYNTAX_FIX = {
    "json": "correct the syntax there (JSON allows no comments or trailing commas)",
    "jsonc": "correct the syntax there",
    "toml": "correct the syntax there",
}


@dataclass(frozen=True)
class Places:
    """The machine the files are read on: what a host's variables and paths refer to."""

    home: Path
    project: Path
    """The project folder: where project files are, and what `${workspaceFolder}` is."""
    platform: str
    environ: Mapping[str, str]


@dataclass(frozen=True)
class FileFormat:
    """One kind of host config file."""

    host: str
    """The host's id, as `--install` takes it (`claude-desktop`, `cursor`, ...)."""
    label: str
    """How the report names it (`Cursor`, `Claude Code (project)`)."""
    syntax: Syntax = "json"
    servers_key: KeyPath = ("mcpServers",)
    env_prefix: bool = False
    """The host expands `${env:NAME}`."""
    editor: bool = False
    """The host expands `${userHome}`, `${workspaceFolder}` and the like."""
    entry_type: str | None = None
    """The `type` the host writes in a stdio entry (VS Code and Claude Code: `stdio`)."""
    keep_loaded: tuple[tuple[str, Any], ...] = ()
    """The host's own keys that keep a server's tools loaded instead of deferred behind its
    tool search (Claude Code: `alwaysLoad`), written in the router's entry: the router's
    `search_tools` behind the host's search would be a search to find the search."""

    def decode(self, text: str, path: Path) -> dict[str, Any]:
        """The document, as the host parses it (`ConfigError` naming file, place and fix)."""
        try:
            if self.syntax == "toml":
                doc: Any = tomllib.loads(text)
            else:
                doc = jsonc.load(text, self.syntax) if text.strip() else {}
        except jsonc.JsonSyntaxError as exc:
            raise ConfigError(
                f"{path}: line {exc.line} column {exc.column}: invalid "
                f"{self.syntax.upper()} ({exc.message}). Fix: {_SYNTAX_FIX[self.syntax]}."
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{path}: invalid TOML ({exc}). Fix: correct the syntax there."
            ) from None
        if not isinstance(doc, dict):
            raise ConfigError(
                f"{path}: the top level is not an object. Fix: this is not a {self.label} "
                "config file; pass the right file."
            )
        return doc

    def tables(self, doc: Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
        """Every place in `doc` that holds servers, with how the report names it."""
        return [(self.servers_key, "")]

    def variables(self, doc: Mapping[str, Any], places: Places) -> Variables:
        return Variables(
            home=places.home,
            project=places.project,
            env_prefix=self.env_prefix,
            editor=self.editor,
            environ=places.environ,
        )

    def convert(self, raw: Any, variables: Variables) -> tuple[dict[str, Any], list[str]]:
        """One of this host's entries in the router's shape (`Unconvertible` if it cannot be)."""
        return convert(raw, variables)

    def read(self, path: Path, text: str, places: Places) -> FileRead:
        """Every server of the file: found, skipped with the reason, or the router itself."""
        doc = self.decode(text, path)
        variables = self.variables(doc, places)
        result = FileRead(path=path, label=self.label)
        for keys, place in self.tables(doc):
            where = f"{path}{place}"
            servers = lookup(doc, keys)
            if servers is None:
                continue
            if not isinstance(servers, Mapping):
                raise ConfigError(
                    f"{path}: {'.'.join(keys)} is not an object. Fix: write "
                    f'{{"{keys[-1]}": {{"name": {{"command": ...}}}}}}.'
                )
            for name, raw in servers.items():
                try:
                    entry, notes = self.convert(raw, variables)
                except Unconvertible as exc:
                    result.skipped.append(Skipped(str(name), where, self.label, str(exc)))
                    continue
                if launches_router(entry):
                    config = served_config(entry, path.parent)
                    result.routers.append(RouterEntry(str(name), where, self.label, config))
                    continue
                result.found.append(
                    Found(str(name), entry, self.host, where, self.label, tuple(notes))
                )
        return result

    def router_entry(self, command: str, args: Sequence[str]) -> dict[str, Any]:
        """The host's entry that starts the router."""
        entry: dict[str, Any] = {"type": self.entry_type} if self.entry_type else {}
        return {**entry, "command": command, "args": list(args), **dict(self.keep_loaded)}

    def install(self, text: str, command: str, args: Sequence[str]) -> str:
        """`text` with its servers replaced by the one router entry, all else unchanged."""
        if self.syntax == "toml":
            raise NotImplementedError(f"{self.label} files are TOML: the format rewrites them")
        syntax: jsonc.Syntax = self.syntax
        doc = self.decode(text, Path(self.label))
        servers = {ROUTER_ENTRY_NAME: self.router_entry(command, args)}
        new = jsonc.replace(text if text.strip() else "{}", self.servers_key, servers, syntax)
        for keys, _ in self.tables(doc):
            if keys != self.servers_key and lookup(doc, keys):
                new = jsonc.replace(new, keys, {}, syntax)
        return new if new.endswith("\n") else new + "\n"

    def check_install(
        self, old: str, new: str, path: Path, command: str, args: Sequence[str]
    ) -> None:
        """Prove the rewrite did what it says: one router entry, every other key as it was."""
        before, after = self.decode(old, path), self.decode(new, path)
        tables = [keys for keys, _ in self.tables(before)] or [self.servers_key]
        expected = {ROUTER_ENTRY_NAME: self.router_entry(command, args)}
        problems = []
        if lookup(after, self.servers_key) != expected:
            problems.append(f"{'.'.join(self.servers_key)} is not the router entry alone")
        problems += [
            f"{'.'.join(keys)} still lists servers"
            for keys in tables
            if keys != self.servers_key and lookup(after, keys)
        ]
        if without(before, tables) != without(after, [*tables, self.servers_key]):
            problems.append("other settings would change")
        if problems:
            raise ConfigError(
                f"{path}: cannot rewrite this file safely ({'; '.join(problems)}). Fix: edit it "
                f"by hand: replace its MCP servers with the entry shown by --dry-run."
            )


def lookup(doc: Any, keys: KeyPath) -> Any:
    """The value at `keys`, or None."""
    for key in keys:
        if not isinstance(doc, Mapping) or key not in doc:
            return None
        doc = doc[key]
    return doc


def without(doc: dict[str, Any], paths: Sequence[KeyPath]) -> dict[str, Any]:
    """A copy of `doc` less the values at `paths` (missing ones are fine)."""
    result = copy.deepcopy(doc)
    for keys in paths:
        parent: Any = lookup(result, keys[:-1]) if len(keys) > 1 else result
        if isinstance(parent, dict):
            parent.pop(keys[-1], None)
    return result
