"""`mcp-router audit verify|show FILE`: check the audit trail's chain, and read it.

`verify` reads the trail whose current file is FILE (the files rotated away from it first,
oldest first) and checks that each line carries the hash of the line before it; it exits 0
and says how many lines it read, or exits 1 naming the file and line where the chain breaks.
When rotation's `keep` has deleted the oldest files, the first line left cannot be checked
against its predecessor, and `verify` says so. Each line is vouched for by the next, so
`verify` also prints the head (the last line's hash): kept elsewhere (a ticket, another
host), it vouches for the last line too. `show` prints the records (as JSON lines,
or one readable line each) of a principal (`--principal SUB`) since a time (`--since`, an
ISO date or time, or seconds ago like `3600s`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("audit", help="check and read the audit trail")
    actions = parser.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    check = actions.add_parser("verify", help="check the trail's hash chain")
    check.add_argument("file", type=Path, help="the trail's current file (router.audit.path)")
    check.set_defaults(handler=run_verify)
    show = actions.add_parser("show", help="print the trail's records")
    show.add_argument("file", type=Path, help="the trail's current file (router.audit.path)")
    show.add_argument("--principal", metavar="SUB", help="only this principal's records")
    show.add_argument("--since", metavar="WHEN", help="ISO date or time, or seconds ago (3600s)")
    show.add_argument("--json", action="store_true", help="print the records as JSON lines")
    show.set_defaults(handler=run_show)


def run_verify(args: argparse.Namespace) -> int:
    # Imported here: the other commands (`serve` among them) never load the trail's modules.
    from router.audit.chain import GENESIS, chain_files, last_hash, rotated_files, verify

    path = Path(args.file).expanduser()
    files = chain_files(path)
    if not files:
        sys.stderr.write(f"error: no audit trail at {path}\n")
        return 2
    rotated = rotated_files(path)
    trimmed = bool(rotated) and rotated[0][0] > 1  # the oldest were deleted by `keep`
    count, broken = verify(files, start=None if trimmed else GENESIS)
    if broken is not None:
        sys.stdout.write(f"BROKEN at {broken} (after {count - 1} good lines)\n")
        return 1
    note = " (the oldest files were rotated away: its first line is taken as given)"
    sys.stdout.write(f"ok: {count} lines in {len(files)} files{note if trimmed else ''}\n")
    # the chain protects each line by the next; the last by this hash, kept elsewhere
    sys.stdout.write(f"head {last_hash(files[-1])}\n")
    return 0


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    if value.endswith("s") and value[:-1].isdigit():
        return time.time() - int(value[:-1])
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise SystemExit(
            f"error: --since {value!r} is neither an ISO date or time nor seconds ago (3600s)"
        ) from None


def run_show(args: argparse.Namespace) -> int:
    from router.audit.chain import chain_files

    path = Path(args.file).expanduser()
    files = chain_files(path)
    if not files:
        sys.stderr.write(f"error: no audit trail at {path}\n")
        return 2
    since = _since(args.since)
    for file in files:
        with file.open("rb") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # `verify` names it
                if not _matches(record, args.principal, since):
                    continue
                sys.stdout.write(
                    json.dumps(record, sort_keys=True) + "\n" if args.json else _line(record)
                )
    return 0


def _matches(record: dict[str, Any], principal: str | None, since: float | None) -> bool:
    if since is not None and float(record.get("time", 0)) < since:
        return False
    if principal is not None:
        who = record.get("principal") or {}
        return isinstance(who, dict) and who.get("sub") == principal
    return True


def _line(record: dict[str, Any]) -> str:
    when = datetime.fromtimestamp(float(record.get("time", 0))).isoformat(timespec="seconds")
    who = record.get("principal") or {}
    sub = who.get("sub", "-") if isinstance(who, dict) else "-"
    return (
        f"{when} {sub} {record.get('kind', '-')} {record.get('tool', '-')} "
        f"{record.get('outcome', '-')} {record.get('latency_ms', '-')} ms\n"
    )
