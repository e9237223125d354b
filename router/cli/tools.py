"""`mcp-router tools review|approve`: the tools that tool pinning holds, and approving them.

Tool pinning (`router.pinning`) records each tool's definition when the router first sees it
and holds a tool whose definition changed since (or, under `strict`, a new tool of a server
seen before) until a person approves it. `review` shows each held tool
of the config's servers with the unified diff of the approved and the new definition;
`approve SERVER/TOOL ...` (or `--all`) approves the new definitions. Both read the pins a
serving router reads: with `router.store` (or `--store URL`), the shared store's, which
every replica shares; without, the config's cache folder's (`tool-pins.sqlite3`). A serving
router notices an approval within a couple of seconds, or at once on the next call to the
tool, and serves the new definition without a restart. The CLI is a person with the config
(and its store's credentials): it may always approve, as an operator (`router.operators`)
may in a session. What they read and do is `router.pinning.review`'s; this module parses
the arguments and opens the pins.

`review --json` prints one list: `[{"server", "tool", "reason": "changed"|"new",
"changed_at": float|null, "approved": object|null, "pending": object, "diff": str}]`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from router.config import RouterConfig, load_config
from router.core.errors import ConfigError

if TYPE_CHECKING:
    from router.pinning import PinStore


_STORE_HELP = "the shared PostgreSQL store whose pins the replicas read (overrides router.store)"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tools", help="review and approve tools held because their definition changed"
    )
    actions = parser.add_subparsers(dest="tools_command", required=True, metavar="ACTION")
    review = actions.add_parser("review", help="the held tools, each with what changed")
    review.add_argument("--config", type=Path, required=True, help="mcpServers config")
    review.add_argument("--json", action="store_true", help="print one JSON list")
    review.add_argument("--store", metavar="URL", help=_STORE_HELP)
    review.set_defaults(handler=run_review)
    approve = actions.add_parser("approve", help="approve held tools' new definitions")
    approve.add_argument("names", nargs="*", metavar="SERVER/TOOL", help="the tools to approve")
    approve.add_argument("--all", action="store_true", help="approve every held tool")
    approve.add_argument("--config", type=Path, required=True, help="mcpServers config")
    approve.add_argument("--store", metavar="URL", help=_STORE_HELP)
    approve.set_defaults(handler=run_approve)


@contextmanager
def opened_pins(config: RouterConfig) -> Iterator[PinStore]:
    """The pins a router serving `config` reads: the shared store's with `router.store`
    (connected, and closed afterwards), else the cache folder's file."""
    from router.embedding.cache import default_cache_dir
    from router.pinning import PinStore
    from router.pinning.origin import origins_of

    cache_dir = config.router.cache_dir or default_cache_dir()
    origins = origins_of(config)  # this config's servers' rows, not another's of one name
    if config.router.store is None:
        yield PinStore.local(cache_dir, origins)
        return
    from router.store.opening import open_store

    store = open_store(config)
    try:
        yield PinStore.serving(store.pin_backend(), cache_dir, origins)
    finally:
        store.close()


def _config(args: argparse.Namespace) -> RouterConfig:
    from router.cli.serve import with_store

    return with_store(load_config(args.config), args.store)


def _note_off(config: RouterConfig, file: Path) -> None:
    if config.router.pinning == "off":
        print(
            f"note: router.pinning is off in {file}: a serving router holds nothing",
            file=sys.stderr,
        )


def run_review(args: argparse.Namespace) -> int:
    from router.pinning import review

    config = _config(args)
    _note_off(config, args.config)
    with opened_pins(config) as store:
        held = review.held(store, config.servers)
    if args.json:
        print(json.dumps(review.as_json(held), indent=2, ensure_ascii=False))
    else:
        print(review.as_text(held, args.config))
    return 0


def run_approve(args: argparse.Namespace) -> int:
    from router.pinning import review

    config = _config(args)
    if bool(args.names) == bool(args.all):
        raise ConfigError("name the tools to approve as SERVER/TOOL, or give --all (not both)")
    _note_off(config, args.config)
    with opened_pins(config) as store:
        held = review.held(store, config.servers)
        chosen = review.chosen(held, None if args.all else args.names, args.config)
        if not chosen:
            print("no held tools: nothing to approve")
        for pin in chosen:
            review.approve_shown(store, pin)
            print(f"approved {pin.name}")
    return 0
