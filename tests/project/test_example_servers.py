"""`make run`'s example servers serve the same definitions whatever ran before them.

The example npm servers are installed with `npm ci` from their own lockfile into their own
folder (scripts/servers/examples/ -> .cache/servers/examples), the test servers into
another. In one shared node_modules, installing the test servers (the inspector) hoisted
zod 3 over the example servers' zod 4, and their tools lost parameter descriptions and
bounds. These tests run after `make test`'s installs (test-deps), and check that the
examples folder is exactly its lockfile and that its servers list exactly the committed
definitions (tests/fixtures/example_servers_tools.json; `python -m
tests.project.test_example_servers` writes it anew after a deliberate lockfile change).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.upstream.test_upstream_pool import INSTALL_HINT, SERVERS_DIR

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "scripts" / "servers"
EXAMPLES = SERVERS_DIR / "examples"
EXPECTED = Path(__file__).resolve().parents[1] / "fixtures" / "example_servers_tools.json"
SERVERS = {"everything": ["stdio"], "memory": [], "filesystem": ["."]}
LIST_TIMEOUT = 60.0


def _installed_or_skip() -> None:
    if not (EXAMPLES / "node_modules").is_dir():
        pytest.skip(f"the example servers are not installed; {INSTALL_HINT}")


def _locked_packages(lock: dict[str, Any]) -> dict[str, str]:
    return {
        path: entry["version"]
        for path, entry in lock["packages"].items()
        if path and not entry.get("link")
    }


async def list_definitions(folder: Path, cwd: Path) -> dict[str, list[dict[str, Any]]]:
    """Each example server's tools as it lists them, by name, in JSON form."""
    listed: dict[str, list[dict[str, Any]]] = {}
    for server, args in SERVERS.items():
        command = folder / "node_modules" / ".bin" / f"mcp-server-{server}"
        parameters = StdioServerParameters(command=str(command), args=args, cwd=cwd)
        with anyio.fail_after(LIST_TIMEOUT):
            async with Client(parameters, mode="legacy") as client:
                tools = (await client.list_tools()).tools
        dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
        listed[server] = sorted(dumped, key=lambda tool: str(tool["name"]))
    return listed


def test_each_install_script_has_its_own_locked_folder() -> None:
    examples, tests = LOCKS / "examples", LOCKS / "tests"
    for folder in (examples, tests):
        manifest = json.loads((folder / "package.json").read_text())
        lock = json.loads((folder / "package-lock.json").read_text())
        for package, version in manifest["dependencies"].items():
            assert version[0].isdigit(), f"{folder.name}: {package} is not pinned: {version}"
            assert lock["packages"][f"node_modules/{package}"]["version"] == version
    scripts = {
        name: (ROOT / "scripts" / f"install-{name}-servers.sh").read_text()
        for name in ("example", "test")
    }
    assert "install_npm_locked examples" in scripts["example"]
    assert "install_npm_locked tests" in scripts["test"]
    assert "install_npm_locked examples" not in scripts["test"]


def test_the_installed_example_folder_is_its_lockfile() -> None:
    _installed_or_skip()
    committed = json.loads((LOCKS / "examples" / "package-lock.json").read_text())
    # npm ci writes the tree it made as node_modules/.package-lock.json
    installed = json.loads((EXAMPLES / "node_modules" / ".package-lock.json").read_text())
    assert _locked_packages(installed) == _locked_packages(committed)


@pytest.mark.processes
async def test_example_servers_list_the_committed_definitions(tmp_path: Path) -> None:
    _installed_or_skip()
    listed = await list_definitions(EXAMPLES, tmp_path)
    expected = json.loads(EXPECTED.read_text())
    for server in SERVERS:
        names = [tool["name"] for tool in listed[server]]
        assert names == [tool["name"] for tool in expected[server]], server
        for got, want in zip(listed[server], expected[server], strict=True):
            assert got == want, f"{server}/{got['name']} differs from the committed definition"
    # the definitions zod 3 lost when the test servers shared the folder
    links = next(t for t in listed["everything"] if t["name"] == "get-resource-links")
    count = links["inputSchema"]["properties"]["count"]
    assert "Number of resource links" in count["description"]
    assert (count["minimum"], count["maximum"]) == (1, 10)


if __name__ == "__main__":  # writes the fixture from the installed example servers
    written = anyio.run(list_definitions, EXAMPLES, Path.cwd())
    EXPECTED.write_text(json.dumps(written, indent=1, sort_keys=True) + "\n")
    print(f"wrote {EXPECTED}", file=sys.stderr)
