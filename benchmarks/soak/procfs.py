"""A process's resident memory and open file descriptors, and those of its descendants,
read from `/proc` (Linux only)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Usage:
    """One process's RSS (KiB) and open file descriptors at one moment."""

    pid: int
    name: str
    rss_kib: int
    fds: int


def usage(pid: int) -> Usage:
    """`pid`'s RSS (`VmRSS` of /proc/PID/status) and fd count (entries of /proc/PID/fd).

    Raises:
        ProcessLookupError: The process is gone.
    """
    try:
        status = (PROC / str(pid) / "status").read_text(encoding="utf-8")
        fds = len(os.listdir(PROC / str(pid) / "fd"))
    except FileNotFoundError as gone:
        raise ProcessLookupError(pid) from gone
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss = fields.get("VmRSS", "0 kB").split()[0]  # a zombie has no VmRSS
    return Usage(pid=pid, name=fields["Name"].strip(), rss_kib=int(rss), fds=fds)


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, children before grandchildren (from the `children`
    file of each of its threads)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop(0)
        try:
            tasks = os.listdir(PROC / str(parent) / "task")
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                text = (PROC / str(parent) / "task" / task / "children").read_text()
            except FileNotFoundError:
                continue
            for child in map(int, text.split()):
                if child not in found:
                    found.append(child)
                    frontier.append(child)
    return found


def tree(pid: int) -> tuple[Usage, list[Usage]]:
    """`pid`'s usage and each live descendant's (a descendant that exits meanwhile is left
    out)."""
    children = []
    for child in descendants(pid):
        try:
            children.append(usage(child))
        except ProcessLookupError:
            continue
    return usage(pid), children
