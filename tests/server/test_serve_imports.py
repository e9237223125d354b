"""A feature that is not configured costs nothing at start: `mcp-router serve` on one stdio
upstream, and nothing else configured, answers `initialize` and a search without ever
importing the audit trail, code mode, the reranker, the registry client, PostgreSQL, the
OpenTelemetry SDK, jsonschema, PyJWT with cryptography's x509 (client-credentials upstreams
only) or another command's module (numpy it does import: BM25 ranks with it); configured,
audit and code mode are imported."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from router.cli.main import COMMANDS
from router.server.lifecycle.on_request import ON_REQUEST
from tests.support.serving import ROOT, raw_router, write_config

pytestmark = pytest.mark.processes

LAUNCHER = ROOT / "tests" / "support" / "loaded_modules.py"
UNCONFIGURED = (
    "router.audit",
    "router.code_mode",
    "router.server.code_mode",
    "router.retrieval.rerank",
    "router.hosts.registry",
    "router.store.postgres",
    "opentelemetry.sdk",
    "psycopg",
    "jsonschema",
    "jwt",
    "cryptography.x509",
    *(module for module, _, _ in COMMANDS.values() if module != "router.cli.serve"),
    "router.hosts",
    "router.evaluation",
)
"""Packages a router on one stdio upstream, BM25 only, must not import to answer a search."""

NEVER_BUILT = (
    "router.upstream.personal.building",
    "router.upstream.personal.pending",
    "router.upstream.personal.accounts",
    "router.upstream.personal.upstream",
    "router.shaping",
    "router.upstream.auth.upstreams",
    "mcp.client.auth",
    "prometheus_client",
)
"""What a router with no per-user or remote upstream, endpoint or tool transform never
imports (the OAuth client loads with a remote upstream's sign-in); over
stdio nobody reads its metrics, so prometheus_client neither (the HTTP front's `/metrics`
counts from its start: tests/server/http/test_metrics.py)."""
NOT_BUILT = (*NEVER_BUILT, "router.policy.quotas")
"""What it has not imported before a request comes: the quotas' book is made by a metered
call (their module loads with the call pipeline's, after the first answer)."""


def counting(tmp_path: Path) -> dict[str, Any]:
    """The smallest stdio upstream: one tool, no SDK."""
    upstream = ROOT / "tests" / "upstreams" / "counting.py"
    return {"command": sys.executable, "args": [str(upstream), str(tmp_path / "requests.log")]}


async def modules_after_a_search(config: Path) -> set[str]:
    """The modules a router serving `config` had imported when it exited, after `initialize`
    and one search."""
    out = config.parent / "modules.txt"
    async with raw_router(config, launcher=[str(LAUNCHER), str(out)]) as router:
        with anyio.fail_after(60):
            await router.initialize()
            found = await router.call("search_tools", {"query": "touch the counter"})
            await router.finish()
    assert found["structuredContent"]["tools"][0]["name"] == "count__touch"
    return set(out.read_text(encoding="utf-8").split())


def imported(modules: set[str], package: str) -> bool:
    return any(name == package or name.startswith(package + ".") for name in modules)


async def test_a_router_with_nothing_configured_imports_no_feature(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"count": counting(tmp_path)})
    modules = await modules_after_a_search(config)
    assert "router.server.lifecycle.app" in modules  # the launcher saw the server run
    assert [p for p in UNCONFIGURED if imported(modules, p)] == []
    assert [p for p in NEVER_BUILT if imported(modules, p)] == []


async def test_audit_and_code_mode_are_imported_when_configured(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"count": counting(tmp_path)},
        audit={"path": str(tmp_path / "trail.jsonl")},
        endpoints={"coder": {"mode": "code"}},
    )
    modules = await modules_after_a_search(config)
    assert imported(modules, "router.audit")
    assert imported(modules, "router.server.code_mode")


async def test_the_start_up_imports_are_frozen_and_the_collector_runs_after(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"count": counting(tmp_path)})
    await modules_after_a_search(config)
    collector = json.loads((tmp_path / "modules.gc").read_text(encoding="utf-8"))
    assert collector["enabled"] is True  # disabled only while the server's modules load
    assert collector["frozen"] > 0  # what they made is out of the collector's passes


UNTIL_ANSWERED = """
import json, sys
import anyio
from router.config import load_config
from router.server.lifecycle.app import build_server, router_state
import router.server.lifecycle.stdio

config = load_config(sys.argv[1])

async def main() -> None:
    build_server(config, None)
    async with router_state(config, None, one_host=True):
        await anyio.sleep(0)  # the lifespan's tasks have started; no request has come
        print(json.dumps(sorted(sys.modules)))

anyio.run(main)
"""


async def test_a_serving_router_imports_its_request_handlers_only_once_a_request_is_answered(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"count": counting(tmp_path)})
    done = await anyio.run_process(
        [sys.executable, "-c", UNTIL_ANSWERED, str(config)], cwd=ROOT, check=True
    )
    modules = set(json.loads(done.stdout))
    assert "router.server.lifecycle.state" in modules  # serving: the state is built
    waiting = [*ON_REQUEST, "router.retrieval.retriever", "bm25s"]
    assert [m for m in waiting if imported(modules, m)] == []
    assert [m for m in NOT_BUILT if imported(modules, m)] == []
    after_a_search = await modules_after_a_search(config)
    assert [m for m in waiting if not imported(after_a_search, m)] == []
