"""`mcp-router tools review|approve`: the tools that tool pinning holds, and approving them.

Tool pinning (`router.pinning`, `router/pinning.py`) records each tool's definition when the
router first sees it and holds a tool whose definition changed since (or, under `strict`, a
new tool of a server seen before) until a person approves it. `review` shows each held tool
of the config's servers with the unified diff of the approved and the new definition;
`approve SERVER/TOOL ...` (or `--all`) approves the new definitions. Both read the pins in
the config's cache folder (`tool-pins.sqlite3`), which a serving router shares: it notices
an approval within a couple of seconds, or at once on the next call to the tool, and serves
the new definition without a restart.

`review --json` prints one list: `[{"server", "tool", "reason": "changed"|"new",
"changed_at": float|null, "approved": object|null, "pending": object, "diff": str}]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.config import RouterConfig, load_config
from router.errors import ConfigError

if TYPE_CHECKING:
    from router.pinning import Pin, PinStore


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tools", help="review and approve tools held because their definition changed"
    )
    actions = parser.add_subparsers(dest="tools_command", required=True, metavar="ACTION")
    review = actions.add_parser("review", help="the held tools, each with what changed")
    review.add_argument("--config", type=Path, required=True, help="mcpServers config")
    review.add_argument("--json", action="store_true", help="print one JSON list")
    review.set_defaults(handler=run_review)
    approve = actions.add_parser("approve", help="approve held tools' new definitions")
    approve.add_argument("names", nargs="*", metavar="SERVER/TOOL", help="the tools to approve")
    approve.add_argument("--all", action="store_true", help="approve every held tool")
    approve.add_argument("--config", type=Path, required=True, help="mcpServers config")
    approve.set_defaults(handler=run_approve)


def _store(config: RouterConfig) -> PinStore:
    from router.embedding.cache import default_cache_dir
    from router.pinning import PinStore

    return PinStore(config.router.cache_dir or default_cache_dir())


def _held(config: RouterConfig) -> list[Pin]:
    """The held tools of the config's servers (none when nothing was ever recorded)."""
    store = _store(config)
    if not store.path.exists():
        return []
    return [pin for pin in store.pending() if pin.server in config.servers]


def _note_off(config: RouterConfig, file: Path) -> None:
    if config.router.pinning == "off":
        print(
            f"note: router.pinning is off in {file}: a serving router holds nothing",
            file=sys.stderr,
        )


def run_review(args: argparse.Namespace) -> int:
    from router.pinning import diff

    config = load_config(args.config)
    _note_off(config, args.config)
    held = _held(config)
    if args.json:
        listed = [
            {
                "server": pin.server,
                "tool": pin.tool,
                "reason": pin.reason,
                "changed_at": pin.changed_at,
                "approved": pin.approved_definition,
                "pending": pin.pending_definition,
                "diff": diff(pin),
            }
            for pin in held
        ]
        print(json.dumps(listed, indent=2, ensure_ascii=False))
        return 0
    if not held:
        print("no held tools: every tool's definition is the approved one")
        return 0
    for pin in held:
        why = "changed since it was approved" if pin.reason == "changed" else "new (strict)"
        print(f"{pin.name}: {why}, {_ago(pin.changed_at)}")
        print(diff(pin))
        print()
    names = " ".join(pin.name for pin in held)
    print(f"approve: mcp-router tools approve {names} --config {args.config}")
    return 0


def run_approve(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if bool(args.names) == bool(args.all):
        raise ConfigError("name the tools to approve as SERVER/TOOL, or give --all (not both)")
    _note_off(config, args.config)
    held = {pin.name: pin for pin in _held(config)}
    wanted = list(held) if args.all else list(dict.fromkeys(args.names))
    unknown = [name for name in wanted if name not in held]
    if unknown:
        listed = ", ".join(held) or "none"
        raise ConfigError(
            f"not held: {', '.join(unknown)} (held now: {listed}; see mcp-router tools "
            f"review --config {args.config})"
        )
    if not wanted:
        print("no held tools: nothing to approve")
        return 0
    store = _store(config)
    for name in wanted:
        pin = held[name]
        approved = store.approve(pin.server, pin.tool, pin.pending_fingerprint)
        if approved is None:  # the upstream changed it again since `held` was read
            raise ConfigError(f"{name} changed again meanwhile; review it again")
        print(f"approved {name}")
    return 0


def _ago(when: float | None) -> str:
    if when is None:
        return "just now"
    seconds = max(0, int(time.time() - when))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"
