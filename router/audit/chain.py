"""The trail's tamper evidence: each line carries the sha256 of the line before it.

A line is one JSON object with sorted keys and no spaces; its `prev` is the hash of the
previous line's bytes (without the newline), and the first line ever has `GENESIS`. When the
file rotates (`router.audit.trail`), the new file's first line carries the hash of the old
file's last, so the chain runs across every file: `verify` reads them oldest first. A line
changed, removed, added or reordered breaks the chain at the line after it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GENESIS = "0" * 64
"""The `prev` of the first line of a trail."""


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line.rstrip(b"\n")).hexdigest()


def sealed_line(record: dict[str, Any], prev: str) -> bytes:
    """`record` with `prev` as the line the trail writes (newline included)."""
    text = json.dumps({**record, "prev": prev}, sort_keys=True, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


def rotated_name(path: Path, sequence: int) -> Path:
    """The name `path` takes when it is the `sequence`th file rotated away."""
    return path.with_name(f"{path.stem}.{sequence:06d}{path.suffix}")


def rotated_files(path: Path) -> list[tuple[int, Path]]:
    """The files rotated away from `path`, with their sequence numbers, oldest first."""
    pattern = re.compile(re.escape(path.stem) + r"\.(\d{6})" + re.escape(path.suffix) + "$")
    found = []
    if path.parent.is_dir():
        for child in path.parent.iterdir():
            match = pattern.match(child.name)
            if match:
                found.append((int(match.group(1)), child))
    return sorted(found)


def chain_files(path: Path) -> list[Path]:
    """The files of the trail whose current file is `path`, oldest first (those rotated
    away, then `path` itself if it exists)."""
    files = [file for _, file in rotated_files(path)]
    return [*files, path] if path.is_file() else files


@dataclass(frozen=True, slots=True)
class Break:
    """Where the chain breaks: the file, the line (from 1) and why."""

    file: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


def _lines(files: Sequence[Path]) -> Iterator[tuple[Path, int, bytes]]:
    for file in files:
        with file.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                yield file, number, line


def verify(files: Sequence[Path], *, start: str | None = GENESIS) -> tuple[int, Break | None]:
    """The lines read and the first break in the chain of `files` (oldest first), if any.
    `start` is the `prev` the first line must carry; None accepts any (the oldest files
    were deleted by rotation's `keep`)."""
    prev = start
    count = 0
    for file, number, line in _lines(files):
        count += 1
        if not line.endswith(b"\n"):
            return count, Break(file, number, "the line is not finished (a torn write)")
        try:
            record = json.loads(line)
        except ValueError:
            return count, Break(file, number, "not a JSON line")
        if not isinstance(record, dict) or not isinstance(record.get("prev"), str):
            return count, Break(file, number, "no `prev` hash")
        if sealed_line({k: v for k, v in record.items() if k != "prev"}, record["prev"]) != line:
            return count, Break(file, number, "the line is not as the trail writes it")
        if prev is not None and record["prev"] != prev:
            return count, Break(file, number, "`prev` is not the hash of the line before")
        prev = line_hash(line)
    return count, None


def last_hash(path: Path) -> str | None:
    """The hash of the last line of `path`; None when it has none."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        block = 1 << 16
        tail = b""
        while True:
            start = max(0, size - block)
            handle.seek(start)
            tail = handle.read(size - start)
            body = tail.rstrip(b"\n")
            if b"\n" in body or start == 0:
                return line_hash(body.rsplit(b"\n", 1)[-1])
            block *= 4
