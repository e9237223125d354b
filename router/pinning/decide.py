"""What is pinned of a tool, and the one decision: which tools are held, and what to record.

Every backend (`router.pinning.sqlite`, the shared store's `router.store.pins`) reads its
rows into `Seen` and writes what `decide` says; none decides anything itself.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from router.core.catalog import EMPTY_OBJECT_SCHEMA, ToolRecord

Mode = Literal["off", "changes", "strict"]
Reason = Literal["changed", "new", "unverified"]
"""Why a tool is held: its definition changed since it was approved, (strict) it is a new
tool of a server seen before, or the pins cannot be read, so its approval is not confirmed."""
ToolKey = tuple[str, str]
"""A tool as one config names it: (server, tool)."""
RowKey = tuple[str, str, str]
"""A pin's row: (origin, server, tool), the origin being what the server is
(`router.pinning.origin`), so configs that give one name to different servers keep apart."""


def definition(record: ToolRecord) -> dict[str, Any]:
    """What the model reads of a tool, the part that is pinned: as its upstream defines it,
    so a config transform (`router.shaping`) neither hides an upstream's change nor counts
    as one."""
    if record.shaping is not None:
        own = record.shaping.original
        schema = own.input_schema if isinstance(own.input_schema, dict) else None
        found = {
            "name": own.name,
            "description": own.description,
            "inputSchema": schema if schema is not None else dict(EMPTY_OBJECT_SCHEMA),
            "annotations": own.annotations or None,
        }
    else:
        found = {
            "name": record.name,
            "description": record.description,
            "inputSchema": record.input_schema,
            "annotations": record.annotations or None,
        }
    if record.ui:
        # MCP Apps: which UI the tool renders and who may call it are part of what is
        # approved; a tool without one hashes as before, so no pin moves at upgrade
        found["ui"] = record.ui
    return found


def canonical(value: Mapping[str, Any]) -> str:
    """Canonical JSON: sorted keys, no spaces, so equal definitions hash alike."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(value: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


def loads(text: str | None) -> dict[str, Any] | None:
    """A stored definition, or None (none stored, or not an object)."""
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Pin:
    """One tool's row: what was approved, and the change waiting for approval."""

    server: str
    tool: str
    approved_fingerprint: str | None
    approved_definition: dict[str, Any] | None
    pending_fingerprint: str | None
    pending_definition: dict[str, Any] | None
    first_seen: float
    changed_at: float | None
    origin: str = ""
    """What the server is (`router.pinning.origin`); "" for a row keyed by name alone."""

    @property
    def name(self) -> str:
        """`server/tool`, as `mcp-router tools approve` takes it."""
        return f"{self.server}/{self.tool}"

    @property
    def reason(self) -> Reason:
        return "changed" if self.approved_fingerprint is not None else "new"


def diff(pin: Pin) -> str:
    """The approved definition against the pending one, as a unified diff of pretty JSON
    (against nothing for a new tool that `strict` holds)."""

    def lines(value: Mapping[str, Any] | None) -> list[str]:
        if value is None:
            return []
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return "\n".join(
        difflib.unified_diff(
            lines(pin.approved_definition),
            lines(pin.pending_definition),
            fromfile=f"{pin.name} (approved)" if pin.approved_definition else "(not approved)",
            tofile=f"{pin.name} (now)",
            lineterm="",
        )
    )


@dataclass(frozen=True, slots=True)
class Hold:
    """A tool of the catalog that is held, and why."""

    record: ToolRecord
    reason: Reason


@dataclass(frozen=True, slots=True)
class Seen:
    """A tool's row as the decision reads it: its approved and pending fingerprints."""

    approved: str | None
    pending: str | None


def decide(
    seen: Mapping[ToolKey, Seen], tools: Mapping[ToolKey, str], mode: Mode
) -> tuple[dict[ToolKey, Reason], dict[ToolKey, bool]]:
    """Which tools are held (with why), and what to record: for each key, whether its
    fingerprint is recorded as approved (a first sight) or as pending (a change)."""
    servers = {server for server, _ in seen}
    held: dict[ToolKey, Reason] = {}
    record: dict[ToolKey, bool] = {}
    for key, print_ in tools.items():
        row = seen.get(key)
        if row is None:
            if mode == "strict" and key[0] in servers:
                held[key], record[key] = "new", False
            else:
                record[key] = True
        elif print_ != row.approved:
            held[key] = "changed" if row.approved is not None else "new"
            if print_ != row.pending:
                record[key] = False
    return held, record
