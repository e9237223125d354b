"""Where start-up time goes: `mcp-router serve` (stdio, BM25 only) in front of one small stdio
upstream, from process start to the `initialize` answer and to the first search's, in CPU time.

    python -m benchmarks.startup                    # writes benchmarks/results/startup.json
    python -m benchmarks.startup --baseline DIR     # also a tree DIR holding another router/

CPU time (user + system, every thread: /proc/PID/task/*/schedstat) rather than wall time:
on a shared machine the wall clock measures the neighbours. Each run starts the router
through `benchmarks/startup_probe.py`, which marks the stages in the process's own CPU time
(`time.process_time`): the interpreter, the CLI's imports, the command's (`serve`'s module,
imported as it is chosen), the config, the imports `serve` makes before serving, the store
(opened in a worker thread: that thread's time), then serving until `initialize` is
answered, and on to the first search's answer. At the answer the parent sends SIGUSR1 and
the probe writes the stages and the modules imported so far.
A plain SDK server (the low-level `Server` on stdio, nothing else) is the floor, run in the
same rounds, as are the trees given with `--baseline`. Figures are medians of the runs.
The imports by package are from `python -X importtime` of the modules `serve` imports:
wall time of an import (its own, children apart), so read them as shares, not as CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from benchmarks.provenance import head_commit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "startup.json"
PROBE = HERE / "startup_probe.py"
UPSTREAM = ROOT / "tests" / "upstreams" / "counting.py"
SERVE_IMPORTS = (
    "import router.cli.main, router.cli.serve, router.server.lifecycle.app, "
    "router.server.lifecycle.stdio"
)
PLAIN_SDK = """
import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

async def main() -> None:
    server = Server("plain")
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "startup-benchmark", "version": "0"},
    },
}
SEARCH = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "search_tools", "arguments": {"query": "touch the counter"}},
}
TIMEOUT_S = 60.0


def cpu_ms(pid: int) -> float:
    """CPU time of every thread of `pid` so far, in ms (exact, unlike /proc/PID/stat's ticks)."""
    total = 0
    for thread in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{thread}/schedstat").read_text().split()[0])
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e6


def _answer(stdout: IO[bytes], request_id: int, deadline: float) -> dict[str, Any]:
    while time.monotonic() < deadline:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the server closed its stdout")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message
    raise TimeoutError(f"no answer to request {request_id}")


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def one_run(command: list[str], env: dict[str, str], scratch: Path, search: bool) -> dict[str, Any]:
    """Start `command`, answer `initialize` (and a search); the CPU and wall figures, and the
    probe's report when the command runs through it."""
    report = scratch / "probe.json"
    report.unlink(missing_ok=True)
    env = {**env, "STARTUP_PROBE_REPORT": str(report)}
    deadline = time.monotonic() + TIMEOUT_S
    with (scratch / "server.log").open("wb") as log:
        began = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=scratch
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            _send(process.stdin, INITIALIZE)
            _answer(process.stdout, 1, deadline)
            run: dict[str, Any] = {
                "initialize_wall_ms": (time.perf_counter() - began) * 1000,
                "initialize_cpu_ms": cpu_ms(process.pid),
            }
            if search:
                process.send_signal(signal.SIGUSR1)  # the probe writes its stages
                _send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
                _send(process.stdin, SEARCH)
                found = _answer(process.stdout, 2, deadline)
                run["search_wall_ms"] = (time.perf_counter() - began) * 1000
                run["search_cpu_ms"] = cpu_ms(process.pid)
                if "count__touch" not in json.dumps(found):
                    raise RuntimeError(f"the search missed the tool: {found}")
                while not report.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)  # the probe writes it from its signal handler
                run["probe"] = json.loads(report.read_text(encoding="utf-8"))
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return run


def stages(run: dict[str, Any]) -> dict[str, float]:
    """CPU ms per stage of one router run, from the probe's marks and the parent's reads."""
    marks = run["probe"]["marks"]
    found = {
        "interpreter": marks["start"],
        "cli_imports": marks["cli_imported"] - marks["start"],
        "command_imports": marks["config_started"] - marks["cli_imported"],
        "config": marks["config_loaded"] - marks["config_started"],
        "serve_imports": marks["serving"] - marks["config_loaded"],
        "store_open_thread": marks.get("store_thread", 0.0),
        "serving_to_initialize": run["initialize_cpu_ms"] - marks["serving"],
        "initialize_to_search": run["search_cpu_ms"] - run["initialize_cpu_ms"],
    }
    return found


def import_shares(runs: int, env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Median self time (ms, wall) of the imports `serve` makes, by top package (router's by
    subpackage), over `runs` runs of `python -X importtime`."""
    samples: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", SERVE_IMPORTS],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            check=True,
        ).stderr
        totals: dict[str, float] = defaultdict(float)
        for line in err.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
            if match:
                parts = match[2].split(".")
                group = ".".join(parts[:3] if parts[0] == "router" else parts[:1])
                totals[group] += int(match[1]) / 1000
        for group, value in totals.items():
            samples[group].append(value)
    medians = {g: statistics.median(v + [0.0] * (runs - len(v))) for g, v in samples.items()}
    top = sorted(medians.items(), key=lambda item: -item[1])[:25]
    return {group: round(ms, 1) for group, ms in top}


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {
        key: _median([r[key] for r in runs]) for key in runs[0] if key.endswith("_ms")
    }
    if "probe" in runs[0]:
        per_stage = [stages(r) for r in runs]
        found["stages_cpu_ms"] = {k: _median([s[k] for s in per_stage]) for k in per_stage[0]}
        found["router_modules_at_initialize"] = runs[-1]["probe"]["router_modules"]
        found["modules_at_initialize"] = runs[-1]["probe"]["module_count"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each system (median)")
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="a folder holding another router/ package (e.g. `git archive REV router`)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    trees = {"router": ROOT, **{f"baseline:{t.name}": t.resolve() for t in args.baseline}}
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as folder:
        scratch = Path(folder)
        config = scratch / "servers.json"
        upstream = [str(UPSTREAM), str(scratch / "requests.log")]
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {"count": {"command": sys.executable, "args": upstream}},
                    "router": {"cache_dir": str(scratch / "cache")},
                }
            ),
            encoding="utf-8",
        )
        serve = ["serve", "--config", str(config), "--bm25-only"]
        systems: dict[str, Callable[[], dict[str, Any]]] = {
            name: _router_system(tree, serve, scratch) for name, tree in trees.items()
        }
        sdk_script = scratch / "plain_sdk.py"
        sdk_script.write_text(PLAIN_SDK, encoding="utf-8")
        systems["plain_sdk"] = lambda: one_run(
            [sys.executable, str(sdk_script)], dict(os.environ), scratch, search=False
        )
        samples: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
        for name in systems:  # one unmeasured round: caches and page cache warm
            systems[name]()
        for _ in range(args.runs):  # round by round: every system sees the same load
            for name, run in systems.items():
                samples[name].append(run())
        imports = {
            name: import_shares(args.runs, {**os.environ, "PYTHONPATH": str(tree)}, tree)
            for name, tree in trees.items()
        }
    result = {
        "benchmark": "startup",
        "commit": head_commit(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "runs": args.runs,
        "scenario": "serve --bm25-only over stdio, one stdio upstream (tests/upstreams/"
        "counting.py), nothing else configured; CPU = user + system of every thread",
        "systems": {name: summary(runs) for name, runs in samples.items()},
        "imports_self_wall_ms": imports,
        "samples": samples,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, found in result["systems"].items():
        shown = {k: v for k, v in found.items() if not k.startswith(("router_modules", "stages"))}
        print(name, json.dumps(shown))
        if "stages_cpu_ms" in found:
            print("   stages", json.dumps(found["stages_cpu_ms"]))
    return 0


def _router_system(tree: Path, serve: list[str], scratch: Path) -> Callable[[], dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the tree's router/, not the installed one
    return lambda: one_run([sys.executable, str(PROBE), *serve], env, scratch, search=True)


if __name__ == "__main__":
    raise SystemExit(main())
