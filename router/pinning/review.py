"""What a person reads and does to release a held tool: the held tools of a config's servers,
each with what changed, choosing them by name, and approving the definition that was shown.

`mcp-router tools review|approve` (`router.cli.tools`) prints and runs these; an operator's
question in a session (`router.server.calls.pin_approval`) is `question`'s text. Blocking
throughout (the store); the commands named are the ones a person types, with the config file
as they gave it.
"""

from __future__ import annotations

import time
from collections.abc import Container, Sequence
from pathlib import Path
from typing import Any

from router.core.errors import ConfigError
from router.pinning.decide import Pin, diff
from router.pinning.store import PinStore

SHOWN_DIFF = 1_500
"""Characters of the diff a session's question shows; the rest is elided."""


def held(store: PinStore, servers: Container[str]) -> list[Pin]:
    """The held tools of `servers`, by server and tool (none when nothing was ever
    recorded: the pins are not created to find that out)."""
    if not store.backend.exists():
        return []
    return [pin for pin in store.pending() if pin.server in servers]


def as_json(pins: Sequence[Pin]) -> list[dict[str, Any]]:
    """`review --json`: each held tool's rows and diff."""
    return [
        {
            "server": pin.server,
            "tool": pin.tool,
            "reason": pin.reason,
            "changed_at": pin.changed_at,
            "approved": pin.approved_definition,
            "pending": pin.pending_definition,
            "diff": diff(pin),
        }
        for pin in pins
    ]


def as_text(pins: Sequence[Pin], config: Path | str, now: float | None = None) -> str:
    """`review`: each held tool with why, how long ago and its diff, then the command that
    approves them all."""
    if not pins:
        return "no held tools: every tool's definition is the approved one"
    now = time.time() if now is None else now
    lines = []
    for pin in pins:
        why = "changed since it was approved" if pin.reason == "changed" else "new (strict)"
        lines += [f"{pin.name}: {why}, {_ago(pin.changed_at, now)}", diff(pin), ""]
    names = " ".join(pin.name for pin in pins)
    lines.append(f"approve: mcp-router tools approve {names} --config {config}")
    return "\n".join(lines)


def chosen(pins: Sequence[Pin], names: Sequence[str] | None, config: Path | str) -> list[Pin]:
    """The held tools named as SERVER/TOOL (each once, in the order given), or all of them
    for None; `ConfigError`, naming the held ones, when a name is not held."""
    by_name = {pin.name: pin for pin in pins}
    wanted = list(by_name) if names is None else list(dict.fromkeys(names))
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        listed = ", ".join(by_name) or "none"
        raise ConfigError(
            f"not held: {', '.join(unknown)} (held now: {listed}; see mcp-router tools "
            f"review --config {config})"
        )
    return [by_name[name] for name in wanted]


def approve_shown(store: PinStore, pin: Pin) -> None:
    """Approve the definition `pin` shows as pending, for every router sharing the pins;
    `ConfigError` when the upstream changed it again since `pin` was read."""
    if store.approve(pin.server, pin.tool, pin.pending_fingerprint) is None:
        raise ConfigError(f"{pin.name} changed again meanwhile; review it again")


def question(pin: Pin, reason: str) -> str:
    """What an operator is asked in a session before approving `pin`'s pending definition
    and running the call: what happened (`reason`, as the tool was held), and the diff (cut
    to `SHOWN_DIFF` characters)."""
    change = diff(pin)
    if len(change) > SHOWN_DIFF:
        change = change[:SHOWN_DIFF] + f"\n… ({len(change):,} characters in all)"
    if reason == "changed":
        lead = (
            f"The tool {pin.tool} of server {pin.server} changed since it was approved. "
            "Read the change: approve the new definition, for everyone the router serves, "
            "and run this call?"
        )
    else:
        lead = (
            f"Server {pin.server} added a new tool, {pin.tool}, which router.pinning "
            "'strict' holds. Read it: approve it, for everyone the router serves, and run "
            "this call?"
        )
    return f"{lead}\n\n{change}"


def _ago(when: float | None, now: float) -> str:
    if when is None:
        return "just now"
    seconds = max(0, int(now - when))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"
