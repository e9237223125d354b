"""Serving the router over stdio: stdout carries JSON-RPC and nothing else."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from router.config import RouterConfig
from router.embedding.base import Embedder
from router.server.app import build_server


async def serve_stdio(config: RouterConfig, embedder: Embedder | None) -> None:
    # stdio_server points fd 1 at stderr while it serves, so a stray print, a library's
    # progress bar or a child that inherited stdout cannot corrupt the protocol stream.
    server = build_server(config, embedder)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
