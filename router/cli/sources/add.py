"""`mcp-router add`: a server from the official MCP registry's `server.json` into a config.

```
mcp-router add SOURCE --config FILE [--name NAME] [--prefer npm|pypi|remote]
               [--set VAR=VALUE ...] [--version V] [--install] [--replace] [--dry-run]
               [--registry URL]
mcp-router add --search TERM [--registry URL]
```

SOURCE is a `server.json` file, its URL, or a server's registry name
(`io.github.owner/server`, read at `--registry`, by default the official registry; also
`MCP_ROUTER_REGISTRY`). The entry is made by `router.hosts.registry.entries`: an npm package
(`npx -y id@version`) or a PyPI one (`uvx id==version`) run over stdio, else a remote;
`--install` installs the npm or PyPI package into the cache folder instead
(`router.hosts.registry.installing`) and runs the installed command. Environment variables,
headers and arguments the user must supply, and each `{name}` in a value the document
fixes, are written as `${VAR}` placeholders and named on stderr (never a secret's value);
`--set` fills a remote URL's `{variables}`. The file is checked as `serve` reads it, backed
up and replaced in one step. `--search` lists the registry's matches.

Exit codes: 0 done; 2 bad input (an unreadable source, nothing runnable, a name already in
the file without `--replace`); 1 an install or the write failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from router.core.errors import ConfigError

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "add",
        help="add a server from the MCP registry (its server.json, a URL or a registry name)",
        description="Write an mcpServers entry for a server described by the official MCP "
        "registry's server.json, with what the user must set as ${VAR} placeholders.",
    )
    parser.add_argument(
        "source", nargs="?", metavar="SOURCE", help="server.json file, URL, or name"
    )
    parser.add_argument("--config", type=Path, help="the router config to add it to")
    parser.add_argument("--name", help="its name in mcpServers (default: the registry name's tail)")
    parser.add_argument(
        "--prefer", choices=("npm", "pypi", "remote"), help="which of its packages or remotes"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="VAR=VALUE", help="a URL variable's value"
    )
    parser.add_argument(
        "--install",
        action="store_true",
        help="install the npm or PyPI package into the cache folder and run it from there",
    )
    parser.add_argument(
        "--version", dest="package_version", help="run this release of the package instead"
    )
    parser.add_argument("--replace", action="store_true", help="replace an entry of that name")
    parser.add_argument("--dry-run", action="store_true", help="print the entry; write nothing")
    parser.add_argument(
        "--registry",
        default=os.environ.get("MCP_ROUTER_REGISTRY"),
        metavar="URL",
        help="the registry's base URL (default: the official registry)",
    )
    parser.add_argument("--search", metavar="TERM", help="list the registry's servers named so")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from router.hosts.registry.api import DEFAULT_REGISTRY, Registry, read_source

    registry = Registry(args.registry or DEFAULT_REGISTRY)
    if args.search is not None:
        for server in registry.search(args.search):
            fields = (server.get("name"), server.get("version", ""), server.get("description", ""))
            print("  ".join(str(f) for f in fields).rstrip())
        return 0
    if args.source is None or args.config is None:
        raise ConfigError("add: give SOURCE and --config FILE (or --search TERM)")
    return add(read_source(args.source, registry), args)


def add(document: Any, args: argparse.Namespace) -> int:
    from router.hosts import files
    from router.hosts.registry.document import read_server
    from router.hosts.registry.entries import entry_for
    from router.hosts.registry.installing import InstallFailed, install

    server = read_server(document)
    values = dict(_pair(item) for item in args.set)
    added = entry_for(
        server, name=args.name, prefer=args.prefer, values=values, version=args.package_version
    )
    path = args.config.expanduser().absolute()
    config = _read_config(path)
    servers = config.setdefault("mcpServers", {})
    if added.name in servers and not args.replace:
        raise ConfigError(
            f"{path}: mcpServers.{added.name} exists already. Fix: pass --name for another "
            "name, or --replace to replace it."
        )
    if args.install and added.install is not None and not args.dry_run:
        where = _servers_dir(config, path)
        try:
            command = install(added.install, where, added.name)
        except InstallFailed as exc:
            print(f"mcp-router add: error: {exc}", file=sys.stderr)
            return 1
        runtime = len(added.install.runtime_arguments)
        if runtime:
            added.notes.append("the runtime's own arguments (for npx/uvx) are not used installed")
        added.entry["command"] = str(command)
        added.entry["args"] = added.installed_args
    _shared(added, servers)
    servers[added.name] = added.entry
    _check(config, path)
    text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    if args.dry_run:
        print(json.dumps({added.name: added.entry}, indent=2, ensure_ascii=False))
    else:
        try:
            if path.exists():
                print(f"backup: {files.backup(path)}", file=sys.stderr)
            files.write_atomically(path, text)
        except OSError as exc:
            print(f"mcp-router add: error: cannot write {path}: {exc.strerror}", file=sys.stderr)
            return 1
    _report(added, server.name, path, dry_run=args.dry_run)
    return 0


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise ConfigError(f"--set {item}: write it as VAR=VALUE")
    return name, value


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"mcpServers": {}}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a JSON config ({exc}). Fix: name a JSON file.") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: not a JSON object")
    return config


def _check(config: dict[str, Any], path: Path) -> None:
    """The file as `serve` would read it, every `${VAR}` taken as set."""
    from router.config import parse_config
    from router.hosts.merge import EVERY_VARIABLE

    parse_config(config, source=path, environ=EVERY_VARIABLE)


_READS = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def _shared(added: Any, servers: dict[str, Any]) -> None:
    """A note for each variable the new entry reads that another entry reads too: both
    would be sent its one value, which is right only if they are one account."""
    mine = {item.name for item in (*added.needed, *added.defaulted)}
    for other, entry in servers.items():
        if other == added.name:  # the entry --replace replaces
            continue
        for name in sorted(mine & set(_READS.findall(json.dumps(entry)))):
            added.notes.append(
                f"mcpServers.{other} reads ${{{name}}} too: both get its one value "
                "(rename it in one of them if they are different accounts)"
            )


def _servers_dir(config: dict[str, Any], path: Path) -> Path:
    """`servers/` in the config's cache folder, as the example servers are installed."""
    from router.embedding.cache import default_cache_dir

    own = (config.get("router") or {}).get("cache_dir")
    base = (path.parent / Path(own).expanduser()) if own else default_cache_dir()
    return base / "servers"


def _report(added: Any, name: str, path: Path, *, dry_run: bool) -> None:
    where = "(dry run: nothing written)" if dry_run else f"to {path}"
    print(f"added {added.name} ({name}: {added.chosen}) {where}", file=sys.stderr)
    for item in added.needed:
        kind = "secret" if item.secret else "required"
        print(f"  set {item.name} ({kind}): {item.description}".rstrip(": "), file=sys.stderr)
    for item in added.defaulted:  # never a secret: its default is the publisher's
        line = f"  optional: {item.name} (default {item.default!r}): {item.description}"
        print(line.rstrip(": "), file=sys.stderr)
    for item in added.optional:
        print(
            f"  optional, left out: {item.name}: {item.description}".rstrip(": "), file=sys.stderr
        )
    for note in added.notes:
        print(f"  note: {note}", file=sys.stderr)


def _say(line: str) -> None:
    print(line.rstrip(": "), file=sys.stderr)


def registry_arguments(parser: argparse.ArgumentParser) -> None:
    """`import`'s way to the registry: servers added beside the hosts' ones."""
    parser.add_argument(
        "--registry",
        action="append",
        default=[],
        metavar="SERVER",
        help="also add a server from the MCP registry: its registry name, server.json file "
        "or URL (repeatable; what to set is named as with `mcp-router add`)",
    )
    parser.add_argument(
        "--registry-url",
        default=os.environ.get("MCP_ROUTER_REGISTRY"),
        metavar="URL",
        help="the registry's base URL (default: the official registry)",
    )


def from_registry(sources: list[str], base: str | None, servers: dict[str, Any]) -> None:
    """Each registry server of `sources` into `servers` (renamed `NAME-2` on a clash)."""
    if not sources:  # nothing asked: the HTTP client is not even loaded
        return
    from router.hosts.merge import free_name
    from router.hosts.registry.api import DEFAULT_REGISTRY, Registry, read_source
    from router.hosts.registry.document import read_server
    from router.hosts.registry.entries import entry_for

    registry = Registry(base or DEFAULT_REGISTRY)
    for source in sources:
        server = read_server(read_source(source, registry))
        added = entry_for(server)
        added.name = free_name(added.name, servers)
        _shared(added, servers)
        servers[added.name] = added.entry
        _report(added, server.name, Path("the config"), dry_run=False)
