"""An upstream's own output in the router's log: a stdio child's stderr, line by line (never
onto stdout), and the levels of its log notifications.

The SDK hands `errlog` to the child as its stderr file, so it must be a real file
descriptor: a pipe whose read end a task drains without blocking the loop.
"""

from __future__ import annotations

import logging
import os
import re
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio

logger = logging.getLogger(__name__)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters but tab: a child's escape codes must not drive the reader's terminal."""

MAX_LINE = 4000
"""Longer lines are cut: one runaway line must not flood the log."""
_DRAIN_TIMEOUT = 1.0
"""After the child is gone: time for what is left in the pipe; a grandchild may hold it open."""
TAIL_LINES = 5
TAIL_LINE_CHARS = 300


class StderrTail:
    """The last lines a child wrote on stderr: often why it failed ("GITHUB_TOKEN is not
    set", a traceback's last line), which `inspect` shows beside the error the router saw.

    Untrusted text, for people: it is never put into what a model reads."""

    def __init__(self) -> None:
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)

    def add(self, line: str) -> None:
        self._lines.append(line[:TAIL_LINE_CHARS])

    def clear(self) -> None:
        self._lines.clear()

    def text(self) -> str | None:
        """The lines kept, one a line; None when the child wrote nothing."""
        return "\n".join(self._lines) or None


class _LineLogger:
    def __init__(self, upstream: str, tail: StderrTail | None) -> None:
        self._upstream = upstream
        self._tail = tail
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            self._emit(line)
        if len(self._partial) > MAX_LINE:
            self._emit(self._partial)
            self._partial = b""

    def flush(self) -> None:
        if self._partial:
            self._emit(self._partial)
            self._partial = b""

    def _emit(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip()
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
        if text:
            logger.info("[%s] %s", self._upstream, text[:MAX_LINE])
            if self._tail is not None:
                self._tail.add(text)


@asynccontextmanager
async def stderr_to_log(upstream: str, tail: StderrTail | None = None) -> AsyncIterator[TextIO]:
    """Yield a writable file to pass as the child's stderr; its lines go to this logger, and
    the last few to `tail`."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    errlog = os.fdopen(write_fd, "w", encoding="utf-8")
    lines = _LineLogger(upstream, tail)
    done = anyio.Event()

    async def pump() -> None:
        try:
            while True:
                await anyio.wait_readable(read_fd)
                try:
                    chunk = os.read(read_fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    return  # every writer (the child, our copy) has closed
                lines.feed(chunk)
        finally:
            lines.flush()
            done.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                yield errlog
            finally:
                # The child has exited by now; closing our copy lets the pump see EOF.
                errlog.close()
                with anyio.move_on_after(_DRAIN_TIMEOUT, shield=True):
                    await done.wait()
                tg.cancel_scope.cancel()
    finally:
        anyio.notify_closing(read_fd)
        os.close(read_fd)


# MCP's syslog levels (`notifications/message`) in Python's terms.
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def python_level(level: str) -> int:
    """The logging level an upstream's log message of MCP level `level` is logged at."""
    return _LOG_LEVELS.get(level, logging.INFO)
