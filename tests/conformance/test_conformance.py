"""The official MCP conformance suite against the fixture server, directly and through
`mcp-router serve --http` in pass-through mode (`benchmarks/conformance.py` runs both).

Needs node 22 and the suite (`make conformance-deps`, into `.cache/conformance`). Without
them the suite's tests skip, unless `MCP_ROUTER_REQUIRE_CONFORMANCE=1` (as `.ci/run` sets)
makes the missing install a failure.
"""

from __future__ import annotations

import os

import pytest

from benchmarks.conformance import (
    INSTALL_HINT,
    KNOWN_GAPS,
    OUT,
    TABLE,
    Report,
    Suite,
    load,
    render,
    run,
)

REQUIRE = "MCP_ROUTER_REQUIRE_CONFORMANCE"


@pytest.fixture(scope="module")
def report() -> Report:
    suite = Suite.find()
    if suite is None:
        message = f"the conformance suite is not installed: {INSTALL_HINT}"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 and {message}")
        pytest.skip(message)
    return run(suite)


def test_every_scenario_of_the_suite_passes_against_the_fixture(report: Report) -> None:
    failing = {s: report.outcome("direct", s).failures for s in report.scenarios}
    assert {s: f for s, f in failing.items() if f} == {}
    assert len(report.scenarios) >= 30


def test_every_scenario_that_passes_directly_passes_through_the_router(report: Report) -> None:
    regressions = {
        s: report.outcome("router", s).failures for s in report.regressions() if s not in KNOWN_GAPS
    }
    assert regressions == {}


def test_the_known_gaps_still_fail_through_the_router(report: Report) -> None:
    fixed = [s for s in KNOWN_GAPS if s in report.scenarios and report.outcome("router", s).ok]
    assert fixed == [], "these pass through the router now: drop them from KNOWN_GAPS"


def test_the_committed_table_is_rendered_from_the_committed_results() -> None:
    assert TABLE.read_text(encoding="utf-8") == render(load(OUT))
