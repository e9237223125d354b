"""`--log-format json`: stderr carries one JSON object a line, for every command; stdout keeps
only what it always carries (JSON-RPC in stdio mode)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from router.cli.json_logs import JsonFormatter
from tests.server.http.test_metrics import traced_upstream
from tests.support.serving import raw_router, write_config

pytestmark = pytest.mark.processes

JSON_LOGS = ["-m", "router", "--log-format", "json"]


def entries(text: str) -> list[dict[str, Any]]:
    """Every line of `text` as JSON (a line that is not JSON fails the test here)."""
    parsed = [json.loads(line) for line in text.splitlines() if line.strip()]
    for entry in parsed:
        assert {"time", "level", "logger", "message"} <= entry.keys(), entry
    return parsed


def test_a_record_becomes_one_line_with_its_extra_fields_and_traceback() -> None:
    logger = logging.getLogger("router.test")
    try:
        raise ValueError("boom")
    except ValueError:
        record = logger.makeRecord(
            "router.test",
            logging.WARNING,
            __file__,
            1,
            "call to %s failed",
            ("git__status",),
            sys.exc_info(),
            extra={"upstream": "git", "attempt": 2},
        )
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "WARNING"
    assert entry["logger"] == "router.test"
    assert entry["message"] == "call to git__status failed"
    assert entry["upstream"] == "git" and entry["attempt"] == 2
    assert entry["exception"].startswith("Traceback") and "ValueError: boom" in entry["exception"]
    assert entry["time"].endswith("+00:00")


async def test_serve_over_stdio_logs_json_on_stderr_and_only_json_rpc_on_stdout(
    tmp_path: Path,
) -> None:
    path = write_config(tmp_path, {"traced": traced_upstream(), "absent": {"command": "/no/such"}})
    async with raw_router(path, launcher=JSON_LOGS) as router:
        with anyio.fail_after(20):
            await router.initialize()
            await router.search_text("refund a payment")
            lines = await router.finish()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    logged = entries((tmp_path / "router.log").read_text())
    messages = [e["message"] for e in logged]
    assert any("serving on stdio" in m for m in messages), messages
    assert any(e["level"] in ("WARNING", "ERROR") and "absent" in e["message"] for e in logged)


def test_a_command_error_is_a_json_line_too(tmp_path: Path) -> None:
    """After the command as well as before it; the exit code is unchanged."""
    for where in (["--log-format", "json", "route"], ["route", "--log-format", "json"]):
        command = [sys.executable, "-m", "router", *where, "--catalog", "missing.jsonl", "q"]
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2
        assert done.stdout == ""
        (entry,) = entries(done.stderr)
        assert entry["level"] == "ERROR" and "missing.jsonl" in entry["message"]


def test_text_stays_the_default(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "router", "route", "--catalog", "missing.jsonl", "q"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stderr.startswith("mcp-router route: error:")
