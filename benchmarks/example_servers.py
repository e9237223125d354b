"""The example servers of `examples/servers.json` (time, git, fetch from PyPI; everything,
memory, filesystem from npm), as a config a benchmark can run anywhere: paths resolved,
the router's cache in a scratch folder."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from router.config import StdioServer, load_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = ROOT / "examples" / "servers.json"


def example_config(
    scratch: Path, only: Collection[str] | None = None, config: Path = EXAMPLE_CONFIG
) -> dict[str, Any]:
    """The config data, with `only` those servers if given.

    Raises:
        SystemExit: A server's command is missing (run scripts/install-example-servers.sh).
    """
    loaded = load_config(config)
    servers: dict[str, Any] = {}
    for name, server in loaded.servers.items():
        if only is not None and name not in only:
            continue
        command = server.command if isinstance(server, StdioServer) else ""
        if "/" in command and not Path(command).exists():
            raise SystemExit(f"{command} is missing: run scripts/install-example-servers.sh")
        servers[name] = server.model_dump(mode="json", exclude_none=True)
    router = loaded.router.model_dump(mode="json", exclude_none=True)
    return {"mcpServers": servers, "router": {**router, "cache_dir": str(scratch / "cache")}}
