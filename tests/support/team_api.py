"""`tests/upstreams/team_api.py` as a process: an upstream that trusts the loopback identity
provider (`tests/support/identity_provider.py`) and lists each caller's own items."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.conftest import ROOT


@asynccontextmanager
async def running_team_api(issuer: str, module: str = "team_api") -> AsyncIterator[str]:
    """The team API (or another of `tests/upstreams/` that serves so: `module`), trusting
    `issuer`; its MCP URL."""
    command = [sys.executable, "-m", f"tests.upstreams.{module}", "--issuer", issuer]
    async with await anyio.open_process(command, cwd=ROOT, stderr=None) as process:
        assert process.stdout is not None
        try:
            with anyio.fail_after(20):
                line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 4096)
            yield line.decode().strip()
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
