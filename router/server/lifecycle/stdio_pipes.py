"""stdin and stdout for the stdio transport, read and written on the event loop.

The SDK's `stdio_server` wraps the standard streams with `anyio.wrap_file`: every line read
and every write and flush is a round trip through a worker thread, three per forwarded
call, and that was most of what a call through the router added (the overhead is tracked
in benchmarks/results/perf.json, `calls`). Pipes
and terminals can be watched by the event loop instead: a read happens once the loop says
the descriptor is readable, and returns at once with what is there. Writes of a pipe's
atomic size go straight out when it is writable; a larger message, which could block
while the host drains the pipe, is written from a worker thread as before.

Like the SDK's default, while serving fd 0 points at the null device and fd 1 at stderr,
so a stray print or a child that inherits the descriptors cannot corrupt the protocol
stream. Standard streams that are regular files (`serve < requests.jsonl`) cannot be
watched by the loop: those use the SDK's thread-backed files.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import select
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import anyio.to_thread

_CHUNK = 1 << 16


def _watchable(fd: int) -> bool:
    """Whether the event loop can wait on `fd` (a pipe, socket or terminal)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class LoopReader:
    """Lines of a descriptor, as an async iterator of `str` (what `stdio_server` reads)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._eof = False

    def __aiter__(self) -> LoopReader:
        return self

    async def __anext__(self) -> str:
        while True:
            newline = self._buffer.find("\n")
            if newline >= 0:
                line, self._buffer = self._buffer[: newline + 1], self._buffer[newline + 1 :]
                return line
            if self._eof:
                if self._buffer:
                    line, self._buffer = self._buffer, ""
                    return line
                raise StopAsyncIteration
            await anyio.wait_readable(self._fd)
            data = os.read(self._fd, _CHUNK)  # readable: returns what is there at once
            self._eof = not data
            self._buffer += self._decoder.decode(data, final=self._eof)


class LoopWriter:
    """Text out to a descriptor (what `stdio_server` writes): small writes on the loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        if len(data) > select.PIPE_BUF:
            await anyio.to_thread.run_sync(self._write_all, data)
            return
        while data:
            await anyio.wait_writable(self._fd)
            data = data[os.write(self._fd, data) :]  # writable: PIPE_BUF bytes fit at once

    def _write_all(self, data: bytes) -> None:
        while data:
            data = data[os.write(self._fd, data) :]

    async def flush(self) -> None:
        """Nothing is buffered."""


@contextmanager
def _diverted(fd: int, replacement: int) -> Iterator[int]:
    """A private duplicate of `fd` (the wire), with `fd` itself pointed at `replacement`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(replacement, fd)
        try:
            yield private
        finally:
            os.dup2(private, fd)
    finally:
        os.close(private)


@asynccontextmanager
async def loop_stdio() -> AsyncIterator[tuple[LoopReader, LoopWriter] | None]:
    """The wire's reader and writer; None where the standard streams cannot be watched by
    the event loop (then the SDK's own stdio handling is the one to use)."""
    if sys.platform == "win32" or not (_watchable(0) and _watchable(1)):
        yield None
        return
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        with _diverted(0, null) as wire_in, _diverted(1, 2) as wire_out:
            yield LoopReader(wire_in), LoopWriter(wire_out)
    finally:
        os.close(null)
