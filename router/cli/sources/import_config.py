"""`mcp-router import`: gather the MCP servers of every host into one router config.

```
mcp-router import [SOURCE ...] [--out FILE] [--install HOST] [--endpoints] [--dry-run]
                  [--project DIR]
```

Reads Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Codex and Copilot CLI configs
(each host's user files, and the project files of `--project`, by default the current
folder), or the files and hosts given as SOURCE. Writes one router config holding every
server once (stdout, or `--out`), after checking it as `serve` would. The report on stderr
says what was found where: each server added, renamed (another server had its name), kept
once (the same server was found before) or skipped (with the reason).

`--install HOST` then rewrites that host's user config so its MCP servers are exactly one
entry, `mcp-router`, that serves the new config, after copying the file to
`<file>.bak-YYYYmmdd-HHMMSS`; every other setting in the file stays as it was, and the
report names the `mcp-router auth login` command of each remote server that may need a
sign-in (one without its own `Authorization` header). `--dry-run` prints the change as a
unified diff and writes nothing. `--endpoints` also writes one endpoint per host into
`router.endpoints` (`router.config.shaping`), each with that host's servers; with
`--install HOST`, the host's entry serves its own endpoint (`serve --endpoint HOST`);
`--registry SERVER` adds a server from the MCP registry beside them (`router.cli.sources.add`).

Exit codes: 0 done; 2 bad input (a SOURCE that is missing or unreadable, a host file that
does not parse, nothing found, an entry of the host being installed that cannot be
imported); 1 a file could not be written.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.cli.sources.add import from_registry, registry_arguments
from router.core.errors import ConfigError
from router.hosts import files
from router.hosts.base import ROUTER_ENTRY_NAME, FileFormat, Places, Syntax
from router.hosts.discovery import (
    GENERIC,
    HOSTS,
    HostFile,
    config_dir,
    detect_format,
    host_files,
    install_target,
)
from router.hosts.entries import ROUTER_CONFIG_LABEL, FileRead, Found, RouterEntry, Skipped
from router.hosts.oauth import needs_sign_in

if TYPE_CHECKING:  # router.hosts.merge loads pydantic: not for `--help`
    from router.hosts.merge import Merged


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="gather the MCP servers of your hosts (Claude, Cursor, VS Code, ...) into one "
        "router config",
        description="Read the MCP server configs of Claude Desktop, Claude Code, Cursor, "
        "VS Code, Windsurf, Codex and Copilot CLI (or the files given) and write one router "
        "config that holds every server once. The report on stderr says what was found where.",
    )
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help=f"a host ({', '.join(HOSTS)}) or a config file; default: every host config found",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the router config here (default: stdout; with --install: "
        "~/.config/mcp-router/servers.json); an existing file is backed up first",
    )
    parser.add_argument(
        "--install",
        choices=HOSTS,
        metavar="HOST",
        help="then make the router that host's only MCP server, after a timestamped backup "
        f"of its config ({', '.join(HOSTS)})",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the changes as a diff; write nothing"
    )
    parser.add_argument(
        "--endpoints",
        action="store_true",
        help="also write one endpoint per host into router.endpoints, each serving that "
        "host's servers (at /mcp/HOST, or `serve --endpoint HOST`); with --install, the host "
        "is given its own endpoint",
    )
    registry_arguments(parser)
    parser.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="the project whose .mcp.json, .cursor/, .vscode/ and .codex/ configs are read "
        "(default: the current folder)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    places = Places(
        home=Path.home(),
        project=(args.project or Path.cwd()).expanduser().absolute(),
        platform=sys.platform,
        environ=os.environ,
    )
    plan = _plan(args, places)
    found_servers = [found for read in plan.reads for found in read.found]
    from router.hosts.merge import config_text, host_endpoints, merge

    merged = merge(found_servers)
    from_registry(args.registry, args.registry_url, merged.servers)
    out = _out_path(args, places)
    endpoints = host_endpoints(merged) if args.endpoints else None
    config = config_text(merged, _existing_router_section(out), endpoints, out)
    _report(plan, merged, out)
    changes: list[tuple[Path, str | None, str]] = []
    if out is not None:
        changes.append((out, _read(out), config))
    if args.install:
        assert out is not None  # --install always has an out file
        endpoint = args.install if endpoints and args.install in endpoints else None
        changes.append(_install_change(args.install, plan, places, out, endpoint))
    if args.dry_run:
        for path, old, new in changes:
            if old != new:
                print(files.unified_diff(path, old, new), end="")
        if out is None:
            print(config, end="")
        if args.install:
            assert out is not None
            _report_sign_in(merged, out, "after the install, these")
        print("dry run: nothing written", file=sys.stderr)
        return 0
    if out is None:
        print(config, end="")
    try:
        for path, old, new in changes:
            _write(path, old, new, is_host=path != out)
    except OSError as exc:
        print(
            f"mcp-router import: error: cannot write {exc.filename}: {exc.strerror}",
            file=sys.stderr,
        )
        return 1
    if args.install:
        assert out is not None
        _report_install(args.install, plan, places, changes[-1][0])
        _report_sign_in(merged, out, "these")
    return 0


@dataclass
class _Plan:
    """The files read, and what they hold."""

    reads: list[FileRead] = field(default_factory=list)
    missing: list[HostFile] = field(default_factory=list)
    install_read: FileRead | None = None


def _plan(args: argparse.Namespace, places: Places) -> _Plan:
    plan = _Plan()
    sources: list[tuple[FileFormat, Path]] = []
    known = {item.path.absolute(): item for item in host_files(places)}
    for source in args.sources or [None]:
        if source is None or (source in HOSTS and not Path(source).exists()):
            wanted = [
                item for item in known.values() if source is None or item.format.host == source
            ]
            present = [item for item in wanted if item.path.is_file()]
            plan.missing += [item for item in wanted if not item.path.is_file()]
            if source is not None and not present:
                paths = ", ".join(str(item.path) for item in wanted)
                raise ConfigError(
                    f"{source}: no config found (looked in {paths}). Fix: pass the file's "
                    "path as SOURCE."
                )
            sources += [(item.format, item.path) for item in present]
            continue
        path = Path(source).expanduser().absolute()
        if not path.is_file():
            raise ConfigError(
                f"{source}: no such file. Fix: pass a config file, or a host: {', '.join(HOSTS)}."
            )
        item = known.get(path)
        sources.append((item.format if item else _sniff(path, places), path))
    target = install_target(places, args.install, _settings(places)) if args.install else None
    if target is not None and target.path.is_file():
        sources.append((target.format, target.path))
    seen: set[Path] = set()
    queue = list(sources)
    while queue:
        fmt, path = queue.pop(0)
        if path.absolute() in seen:
            continue
        seen.add(path.absolute())
        read = fmt.read(path, _text(path), places)
        plan.reads.append(read)
        if target is not None and path.absolute() == target.path.absolute():
            plan.install_read = read
        served = []
        for router in read.routers:  # an earlier install: its servers are in its config
            if router.config is not None and router.config.is_file():
                fmt = _sniff(router.config, places)
                fmt = replace(fmt, label=ROUTER_CONFIG_LABEL) if fmt.host == "file" else fmt
                served.append((fmt, router.config))
        queue[0:0] = served  # read next, where the host had them: names stay as they were
    if not any(read.found for read in plan.reads) and not args.registry:
        looked = [str(read.path) for read in plan.reads] + [str(item.path) for item in plan.missing]
        raise ConfigError(
            f"no MCP servers found (looked in {', '.join(looked)}). Fix: pass the config "
            "file that lists them as SOURCE."
        )
    return plan


def _sniff(path: Path, places: Places) -> FileFormat:
    """The format of a file that no host is known to keep there."""
    syntax: Syntax = "toml" if path.suffix.lower() == ".toml" else "jsonc"
    try:
        doc: dict[str, Any] | None = FileFormat("file", "file", syntax).decode(_text(path), path)
    except ConfigError:
        doc = None  # the format's own, stricter reading names the error
    return detect_format(path, doc, places.home)


def _settings(places: Places) -> dict[str, Any] | None:
    """VS Code's user settings.json, for where `--install vscode` writes."""
    settings = next(item for item in host_files(places) if item.path.name == "settings.json")
    if not settings.path.is_file():
        return None
    return settings.format.decode(_text(settings.path), settings.path)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc}).") from None


def _read(path: Path) -> str | None:
    return _text(path) if path.exists() else None


def _out_path(args: argparse.Namespace, places: Places) -> Path | None:
    out: Path | None = args.out
    if out is None and args.install:
        base = config_dir(places) if places.platform != "darwin" else places.home / ".config"
        out = base / "mcp-router" / "servers.json"
    if out is None:
        return None
    if out.suffix.lower() == ".toml":
        raise ConfigError(f"--out {out}: the router config is written as JSON. Fix: name it .json.")
    return out.expanduser().resolve()


def _existing_router_section(out: Path | None) -> dict[str, Any] | None:
    """An existing `--out` config's `router` section: kept, so settings survive a re-import."""
    if out is None or not out.is_file():
        return None
    doc = GENERIC.decode(_text(out), out)
    section = doc.get("router")
    return section if isinstance(section, dict) else None


def _install_change(
    host: str, plan: _Plan, places: Places, out: Path, endpoint: str | None = None
) -> tuple[Path, str | None, str]:
    target = install_target(places, host, _settings(places))
    read = plan.install_read
    if read is not None and read.skipped:
        lines = "; ".join(f"'{item.name}' ({item.reason})" for item in read.skipped)
        raise ConfigError(
            f"{target.path}: not installing: {lines} cannot be imported, and the router would "
            f"not start it. Fix: correct or remove it in {target.path}, then run again."
        )
    old = _read(target.path)
    command, args = files.launcher(out, endpoint)
    new = target.format.install(old or "", command, args)
    target.format.check_install(old or "", new, target.path, command, args)
    return target.path, old, new


def _write(path: Path, old: str | None, new: str, *, is_host: bool) -> None:
    if old == new:
        return
    if old is not None:
        saved = files.backup(path)
        print(f"backup: {saved}", file=sys.stderr)
    files.write_atomically(path, new)
    if not is_host:
        print(f"wrote {path}", file=sys.stderr)


def _report(plan: _Plan, merged: Merged, out: Path | None) -> None:
    for read in plan.reads:
        groups: dict[str, list[str]] = {}
        items: Iterable[Found | Skipped | RouterEntry] = [*read.found, *read.skipped, *read.routers]
        for item in items:
            groups.setdefault(item.where, []).extend(_lines(item, merged))
        if not groups:
            groups[str(read.path)] = []
        for where, lines in groups.items():
            count = len([line for line in lines if not line.startswith("    ")])
            summary = f"{count} server{'s' if count != 1 else ''}" if count else "no servers"
            _say(f"{read.label}: {where}: {summary}")
            for line in lines:
                _say(line)
    if plan.missing:
        _say("not found: " + ", ".join(str(item.path) for item in plan.missing))
    _say(_summary(plan, merged, out))


def _lines(item: Found | Skipped | RouterEntry, merged: Merged) -> list[str]:
    if isinstance(item, Skipped):
        return [f"  {item.name}: SKIPPED: {item.reason}"]
    if isinstance(item, RouterEntry):
        if item.config is None:
            return [f"  {item.name}: the router itself (no --config): nothing to import"]
        state = "read below" if item.config.is_file() else "missing!"
        return [f"  {item.name}: the router itself, serving {item.config} ({state})"]
    outcome = merged.outcome(item)
    other = outcome.other
    if outcome.kind == "added":
        head = f"  {item.name}: added"
    elif outcome.kind == "renamed" and other is not None:
        head = (
            f"  {item.name}: added as '{outcome.name}': a different server has that name "
            f"({other.label}: {other.where})"
        )
    elif outcome.kind == "renamed":
        head = f"  {item.name}: added as '{outcome.name}' (no spaces or '/' in router names)"
    elif outcome.kind == "duplicate" and other is not None:
        head = (
            f"  {item.name}: the same server as '{outcome.name}' ({other.label}: "
            f"{other.where}): kept once"
        )
    else:
        head = f"  {item.name}: SKIPPED: the router would refuse it: {outcome.reason}"
    return [head, *(f"    note: {note}" for note in item.notes)]


def _summary(plan: _Plan, merged: Merged, out: Path | None) -> str:
    kinds = [outcome.kind for outcome in merged.outcomes]
    skipped = sum(len(read.skipped) for read in plan.reads) + kinds.count("invalid")
    entries = len(kinds) + sum(len(read.skipped) for read in plan.reads)
    parts = [f"{len(merged.servers)} servers"]
    if kinds.count("renamed"):
        parts.append(f"{kinds.count('renamed')} renamed")
    duplicates = kinds.count("duplicate")
    if duplicates:
        parts.append(f"{duplicates} duplicate{'s' if duplicates != 1 else ''} kept once")
    if skipped:
        parts.append(f"{skipped} SKIPPED")
    where = out if out is not None else "stdout"
    return f"{entries} entries in {len(plan.reads)} files: {', '.join(parts)} -> {where}"


def _report_install(host: str, plan: _Plan, places: Places, target: Path) -> None:
    label = next(item.format.label for item in host_files(places) if item.format.host == host)
    _say(
        f"installed: {target} now starts the router only ('{ROUTER_ENTRY_NAME}'); restart "
        f"{label} to use it"
    )
    for read in plan.reads:
        same_host = any(found.host == host for found in read.found)
        if same_host and read.path.absolute() != target.absolute():
            _say(
                f"note: {read.path} still lists {len(read.found)} servers for {read.label}; "
                f"they are in the router config now, so {read.label} would start them twice: "
                "remove them there"
            )


def _report_sign_in(merged: Merged, out: Path, these: str) -> None:
    """The `auth login` command of each remote server that may ask for a sign-in."""
    names = [name for name, entry in merged.servers.items() if needs_sign_in(entry)]
    if names:
        _say(f"{these} remote servers may need sign-in before their tools work:")
    for name in names:
        command = ["mcp-router", "auth", "login", name, "--config", str(out)]
        _say(f"  sign in once: {shlex.join(command)}")


def _say(line: str) -> None:
    print(line, file=sys.stderr)
