"""`python -m benchmarks.soak`: the router under mixed HTTP traffic for a long while, held to
no failed request, no RSS growth over 10% and no fd growth.

    python -m benchmarks.soak --minutes 30          # results/soak.json + the README section
    python -m benchmarks.soak --seconds 30 --out X  # a short run (default out/soak.json)
    python -m benchmarks.soak --table-only          # re-render the README section

`mcp-router serve --http` runs as a child process (loopback) in front of the example
servers, or of the SDK-based relay test upstream where those are not installed
(`--upstreams`). Clients (`traffic.py`) run a warm-up, stop and close everything (a quiet
point: sessions back to 0, fds settled), then run again for the measured time and stop
again. The checks compare the second quiet point with the first; the router's RSS and
fds, its children's (the upstreams'), and its open sessions are also read every
`--interval` seconds throughout and kept in the result. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

from benchmarks.example_servers import example_config
from benchmarks.http_load import spawned
from benchmarks.soak import report
from benchmarks.soak.monitor import Monitor
from benchmarks.soak.tasks import EXAMPLE_TASKS, RELAY_TASKS, Draw, relay_config
from benchmarks.soak.traffic import REQUEST_TIMEOUT, ROLES, load
from benchmarks.suite.readme import replace_between
from benchmarks.suite.report import code_state

HERE = Path(__file__).resolve().parent.parent
OUT = HERE / "results" / "soak.json"
SHORT_OUT = HERE / "out" / "soak.json"
README = HERE / "README.md"
START, END = "<!-- soak:start -->", "<!-- soak:end -->"
SCHEMA = "mcp-router.soak/1"
FULL_SECONDS = 30 * 60
"""A run this long or longer writes the committed result by default; shorter ones do not."""
SHARED_MACHINE_NOTE = (
    "The load generator runs on the router's machine; on a machine shared with other work "
    "(other test runs on the same cores here) requests/s is lower than on an idle one. The "
    "clients are paced, so requests/s is also capped by design; it is not a throughput "
    "figure (see http-load.json for that)."
)


@dataclass(frozen=True)
class Options:
    seconds: float
    warmup: float
    clients: int
    rate: float
    interval: float
    upstreams: str
    rss_limit: float
    seed: int
    roles: tuple[str, ...] = ROLES
    learn: bool = True


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, help="length of the measured run (default 30)")
    length.add_argument("--seconds", type=float, help="length of the measured run, in seconds")
    parser.add_argument("--warmup", type=float, help="seconds (default: a third, 10 to 60)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument(
        "--rate", type=float, default=2.0, help="requests/s per client at most (0: no pause)"
    )
    parser.add_argument("--interval", type=float, help="seconds between readings (10, or 2)")
    parser.add_argument(
        "--roles", default=",".join(ROLES), help="the client roles, in turn (to narrow a leak)"
    )
    parser.add_argument(
        "--no-learn", action="store_true", help="router.learn false (no usage memory)"
    )
    parser.add_argument("--upstreams", choices=("auto", "examples", "relay"), default="auto")
    parser.add_argument("--rss-limit", type=float, default=report.RSS_GROWTH_LIMIT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", action="append", default=[], help="added to the notes")
    parser.add_argument("--out", type=Path, help=f"default {OUT} (full run) or {SHORT_OUT}")
    parser.add_argument("--table-only", action="store_true", help="re-render the README")
    return parser


def roles(text: str) -> tuple[str, ...]:
    chosen = tuple(role.strip() for role in text.split(",") if role.strip())
    unknown = set(chosen) - set(ROLES)
    if unknown or not chosen:
        raise SystemExit(f"--roles: choose among {', '.join(ROLES)}")
    return chosen


def upstreams(choice: str, scratch: Path) -> tuple[str, dict[str, Any], tuple[Draw, ...]]:
    """The upstream set's name, the config data, and the tasks the clients draw from."""
    if choice in ("auto", "examples"):
        try:
            return "examples", example_config(scratch), EXAMPLE_TASKS
        except SystemExit:
            if choice == "examples":
                raise
    data = {"mcpServers": relay_config(), "router": {"cache_dir": str(scratch / "cache")}}
    return "relay", data, RELAY_TASKS


async def soak(url: str, pid: int, options: Options, tasks: tuple[Draw, ...]) -> dict[str, Any]:
    """Warm-up, quiet point, run, quiet point; the readings and tallies as result parts."""
    period = 1 / options.rate if options.rate > 0 else 0.0
    async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        tools = (await http.get(f"{url}/healthz")).json()["tools"]
        monitor = Monitor(url, pid, http)
        before = await monitor.read()
        async with anyio.create_task_group() as group:
            group.start_soon(monitor.sample_every, options.interval)
            monitor.phase = "warm-up"
            began = time.monotonic()
            warm = await load(
                url, tasks, options.clients, options.warmup, period, options.seed, options.roles
            )
            warm_s = time.monotonic() - began
            monitor.phase = "quiet"
            start, start_settled = await monitor.quiet()
            monitor.phase = "run"
            began = time.monotonic()
            run = await load(
                url,
                tasks,
                options.clients,
                options.seconds,
                period,
                options.seed + 1,
                options.roles,
            )
            run_s = time.monotonic() - began
            monitor.phase = "quiet"
            end, end_settled = await monitor.quiet()
            group.cancel_scope.cancel()
    series = monitor.samples
    return {
        "tools": tools,
        "warmup": {"duration_s": round(warm_s, 1), "requests": report.requests(warm, warm_s)},
        "duration_s": round(run_s, 1),
        "requests": report.requests(run, run_s),
        "memory": report.memory(start, end, series),
        "fds": report.fds(before, start, end, series),
        "quiet_points": {
            "before_warmup": before.detail(),
            "warmup_end": {**start.detail(), "settled": start_settled},
            "end": {**end.detail(), "settled": end_settled},
        },
        "samples": [reading.row() for reading in series],
    }


def log_errors(log: Path) -> list[str]:
    """The router log's ERROR and CRITICAL lines and tracebacks (the first 20)."""
    if not log.exists():
        return []
    marks = ("ERROR", "CRITICAL", "Traceback")
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line[:300] for line in lines if any(mark in line for mark in marks)][:20]


def measure(options: Options, argv: list[str], notes: list[str]) -> dict[str, Any]:
    code = code_state()
    load_before = [round(x, 2) for x in os.getloadavg()]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-router-soak-") as scratch:
        label, data, tasks = upstreams(options.upstreams, Path(scratch))
        data["router"]["learn"] = options.learn
        config = Path(scratch) / "servers.json"
        config.write_text(json.dumps(data), encoding="utf-8")
        log = Path(scratch) / "router.log"
        with spawned(config, bm25_only=False, log=log) as (url, process):
            parts = anyio.run(soak, url, process.pid, options, tasks)
        errors = log_errors(log)
    turns = options.roles
    roles = {role: len(range(n, options.clients, len(turns))) for n, role in enumerate(turns)}
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "benchmark": "soak",
        "command": report.command_without_notes(
            shlex.join(["python", "-m", "benchmarks.soak", *argv])
        ),
        **code,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_seconds": round(time.perf_counter() - began, 1),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_before": load_before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {
            "duration_s": options.seconds,
            "warmup_s": options.warmup,
            "clients": options.clients,
            "roles": roles,
            "rate_per_client_per_s": options.rate,
            "sample_interval_s": options.interval,
            "request_timeout_s": REQUEST_TIMEOUT,
            "upstreams": label,
            "servers": sorted(data["mcpServers"]),
            "tools": parts.pop("tools"),
            "search": "hybrid (the default model loaded)",
            "learn": options.learn,
            "rss_growth_limit_percent": options.rss_limit,
        },
        "notes": [SHARED_MACHINE_NOTE, *notes],
        **parts,
        "router_log_errors": errors,
    }
    result["checks"] = report.checks(result)
    result["pass"] = all(check["pass"] for check in result["checks"])
    return result


def update_readme(result: dict[str, Any]) -> None:
    text = README.read_text(encoding="utf-8")
    README.write_text(replace_between(text, START, END, report.markdown(result)), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if args.table_only:
        update_readme(json.loads((args.out or OUT).read_text(encoding="utf-8")))
        print(f"rewrote the soak section of {README}")
        return 0
    seconds = args.seconds if args.seconds is not None else (args.minutes or 30) * 60
    out = args.out or (OUT if seconds >= FULL_SECONDS else SHORT_OUT)
    options = Options(
        seconds=seconds,
        warmup=args.warmup if args.warmup is not None else min(60.0, max(10.0, seconds / 3)),
        clients=args.clients,
        rate=args.rate,
        interval=args.interval or (10.0 if seconds >= 300 else 2.0),
        upstreams=args.upstreams,
        rss_limit=args.rss_limit,
        seed=args.seed,
        roles=roles(args.roles),
        learn=not args.no_learn,
    )
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # the SDK client warns "not listed by server" on every call by qualified name
    logging.getLogger("client").setLevel(logging.ERROR)
    result = measure(options, argv, args.note)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    out.write_text(text, encoding="utf-8")
    if out == OUT:
        update_readme(json.loads(text))
    run = result["requests"]
    print(
        f"{run['total']} requests in {result['duration_s']} s ({run['per_s']}/s), "
        f"{run['failed']} failed; wrote {out}"
    )
    for check in result["checks"]:
        verdict = "pass" if check["pass"] else "FAIL"
        print(f"{verdict:4}  {check['what']}: {check['measured']} {check['op']} {check['limit']}")
    return 0 if result["pass"] else 1
