"""Bad input as a new user meets it, through the real command line (`python -m router`):
each gets a clear message and the exit code of its kind, 2 for a usage error (as argparse's
own), 1 for a failure at run time. Ranking runs in BM25 mode: no model is loaded."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_CATALOG, ROOT

pytestmark = pytest.mark.processes

EXAMPLE_QUERIES = ROOT / "examples" / "queries.jsonl"
# A quick, healthy stdio upstream (it ignores `server/discover`: no probe to wait out).
SCRIPTED = {
    "command": sys.executable,
    "args": [str(ROOT / "tests" / "upstreams" / "scripted.py")],
    "protocol": "legacy",
}
ROUTE = ["route", "--catalog", str(EXAMPLE_CATALOG), "--mode", "bm25"]
EVAL = ["eval", "--catalog", str(EXAMPLE_CATALOG), "--queries", str(EXAMPLE_QUERIES)]


def mcp_router(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "router", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def write_config(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


@pytest.mark.parametrize("query", ["", "   "])
def test_route_refuses_an_empty_query_as_mcp_and_http_do(query: str) -> None:
    done = mcp_router(*ROUTE, query)

    assert done.returncode == 2
    assert "mcp-router route: error: argument query: the query must be non-empty" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        ROUTE,
        [*EVAL, "--mode", "bm25"],
        ["inspect", "--wait", "0", "--config", "{config}"],
    ],
    ids=["route", "eval", "inspect"],
)
def test_a_closed_stdout_ends_quietly_with_the_sigpipe_status(
    tmp_path: Path, argv: list[str]
) -> None:
    config = write_config(tmp_path, {})
    argv = [arg.replace("{config}", str(config)) for arg in argv]
    if argv[0] == "route":
        argv.append("what time is it in Tokyo")
    process = subprocess.Popen(
        [sys.executable, "-m", "router", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader is gone before the command writes a line (`| head -0`)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()

    assert process.returncode == 141, err  # 128 + SIGPIPE, as a shell reports `seq 9 | head -0`
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_eval_on_a_file_of_bad_lines_names_each_line_and_its_fault(tmp_path: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    lines = ['{"id": "q1", "query": "time"}', "[1, 2]", "{oops", '{"id": "q4", "gold": []}']
    lines += ['{"query": "x", "gold": [{"server": "s", "name": "n"}]}'] * 10
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")

    done = mcp_router("eval", "--catalog", str(EXAMPLE_CATALOG), "--queries", str(queries))

    assert done.returncode == 2
    err = done.stderr
    assert f"{queries}: no queries could be read: every 14 lines are malformed:" in err
    assert "  line 1: needs 'gold_groups' or 'gold' (a list of tools)" in err
    assert "  line 2: expected a JSON object, got list" in err
    assert "  line 3: Expecting property name enclosed in double quotes" in err
    assert "  line 4: a query needs at least one gold tool in every group" in err
    assert "  line 10: field 'id' must be a string" in err
    assert "line 11:" not in err  # the first ten are named, the rest counted
    assert "  ... and 4 more malformed lines" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"comand": "mcp-server-time"},
            "mcpServers.time.comand: unknown key 'comand' \u2014 did you mean 'command'?",
        ),
        (
            {"command": "mcp-server-time", "arg": ["--local-timezone", "UTC"]},
            "mcpServers.time.arg: unknown key 'arg' \u2014 did you mean 'args'?",
        ),
        (
            {"ulr": "https://example.com/mcp"},
            "mcpServers.time.ulr: unknown key 'ulr' \u2014 did you mean 'url'?",
        ),
    ],
    ids=["kindless", "otherwise-valid", "remote"],
)
def test_a_misspelled_server_key_is_named_with_the_key_meant(
    tmp_path: Path, entry: dict[str, object], message: str
) -> None:
    config = write_config(tmp_path, {"time": entry})

    done = mcp_router("inspect", "--wait", "0", "--config", str(config))

    assert done.returncode == 2
    assert f"mcp-router inspect: error: {config}: {message}" in done.stderr
    meant = message.split("'")[-2]
    assert f"Fix: rename it to '{meant}'." in done.stderr
    assert "neither `command` nor `url`" not in done.stderr
    assert done.stdout == ""


def test_serving_http_on_a_port_in_use_fails_at_once_and_never_claims_to_serve(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        done = mcp_router(
            "serve", "--http", "--bm25-only", "--config", str(config), "--port", str(port)
        )

    assert done.returncode == 1
    assert (
        f"mcp-router serve: error: cannot serve HTTP on 127.0.0.1:{port}: the address is "
        "already in use" in done.stderr
    )
    assert "serving on" not in done.stderr and "Traceback" not in done.stderr


CRASHING = "import sys; print('fatal: GITHUB_TOKEN is not set', file=sys.stderr); sys.exit(3)"


def test_inspect_fails_when_an_upstream_is_down_and_shows_its_own_error(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "scripted": SCRIPTED,
            "crashing": {"command": sys.executable, "args": ["-c", CRASHING]},
            "missing": {"command": str(tmp_path / "no-such-server")},
            "off": {"command": "mcp-server-off", "disabled": True},
        },
    )

    done = mcp_router("inspect", "--wait", "30", "--config", str(config))
    as_json = mcp_router("inspect", "--wait", "30", "--json", "--config", str(config))

    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "upstreams: 4, healthy: 1"
    crashing = lines.index(next(line for line in lines if line.startswith("  crashing: ")))
    assert lines[crashing + 1] == "    stderr: fatal: GITHUB_TOKEN is not set"
    assert f"  missing: cannot start: No such file or directory: {tmp_path}" in done.stdout
    assert not any(line.startswith(("  scripted: ", "  off: ")) for line in lines)
    assert done.stderr.rstrip().endswith(
        "mcp-router inspect: error: 2 of 3 enabled upstreams are not healthy: "
        "crashing (unhealthy), missing (unhealthy)"
    )
    assert as_json.returncode == 1
    upstreams = {u["name"]: u for u in json.loads(as_json.stdout)["upstreams"]}
    assert upstreams["crashing"]["last_stderr"] == "fatal: GITHUB_TOKEN is not set"
    assert upstreams["scripted"]["state"] == "healthy"
    assert upstreams["scripted"]["last_error"] is upstreams["scripted"]["last_stderr"] is None


def test_inspect_of_healthy_upstreams_exits_0(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "scripted": SCRIPTED,
            "off": {"command": "mcp-server-off", "disabled": True},
        },
    )

    done = mcp_router("inspect", "--wait", "30", "--config", str(config))

    assert done.returncode == 0, done.stderr
    assert "upstreams: 2, healthy: 1" in done.stdout
    assert "error" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*ROUTE, "-k", "0", "time"], "argument -k: must be a whole number of at least 1, not '0'"),
        (
            [*ROUTE, "--budget", "0", "time"],
            "argument --budget: must be a whole number of at least",
        ),
        ([*ROUTE, "-k", "five", "time"], "argument -k: must be a whole number, not 'five'"),
        ([*EVAL, "-k", "0"], "argument -k: must be a whole number of at least 1, not '0'"),
        ([*EVAL, "--limit", "-3"], "argument --limit: must be a whole number of at least 1"),
        ([*EVAL, "--mode", "bm25,fast"], "argument --mode: unknown mode 'fast'"),
        ([*EVAL, "--group-by", "level"], "--group-by level: no query in"),
        (["inspect", "--config", "c.json", "-k", "0"], "argument -k: must be a whole number"),
        (["inspect", "--config", "c.json", "--wait", "-1"], "argument --wait: must be a number"),
        (["serve", "--config", "c.json", "--port", "70000"], "argument --port: must be a port"),
        (["bench", "--max-queries", "0"], "argument --max-queries: must be a whole number of"),
        (["bench", "--sets", "nope"], "--sets: nope: no such set in"),
        (["bench", "--sizes", "1000,lots"], "argument --sizes: must be a whole number, not 'lots'"),
    ],
    ids=lambda value: " ".join(value[:1] + value[-2:]) if isinstance(value, list) else None,
)
def test_every_invalid_option_value_is_a_usage_error(argv: list[str], message: str) -> None:
    done = mcp_router(*argv)

    assert done.returncode == 2, done.stderr
    assert f"mcp-router {argv[0]}: error: {message}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("http", [[], ["--http", "--port", "0"]])
def test_an_unreachable_store_stops_serve_at_once_with_its_address(
    tmp_path: Path, http: list[str]
) -> None:
    config = write_config(tmp_path, {"scripted": SCRIPTED})
    url = "postgresql://router:s3cret@127.0.0.1:9/tools"
    done = mcp_router("serve", "--config", str(config), "--bm25-only", "--store", url, *http)

    assert done.returncode == 1
    assert (
        "mcp-router serve: error: store postgresql://router@127.0.0.1:9/tools is unreachable: "
        in done.stderr
    )
    assert "s3cret" not in done.stderr
    assert "serving on" not in done.stderr
    assert done.stdout == ""


def test_a_store_that_is_not_postgresql_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"scripted": SCRIPTED})
    done = mcp_router("serve", "--config", str(config), "--store", "mysql://db/tools")

    assert done.returncode == 2
    assert "--store: 'mysql://db/tools' is not a PostgreSQL URL" in done.stderr
