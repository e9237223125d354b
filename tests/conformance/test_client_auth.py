"""The official MCP conformance suite's client authorization scenarios, with the router as the
client (`tests/conformance/router_auth_client.py`: `mcp-router auth login`, then
`mcp-router serve` driven as a host); `benchmarks/conformance_auth.py` runs them with the SDK's
own client too.

Needs node 22 and the suite's 0.2.0 line (`make conformance-deps`, into
`.cache/conformance-next`). Without them the tests skip, unless
`MCP_ROUTER_REQUIRE_CONFORMANCE=1` (as `.ci/run` sets) makes the missing install a failure.
Every `auth/*` scenario runs, one at a time, except those the SDK does not implement
(`SDK_GAPS`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.conformance import Suite
from benchmarks.conformance_auth import (
    INSTALL_HINT,
    OUT,
    SDK_GAPS,
    TABLE,
    auth_scenarios,
    find_suite,
    load,
    render,
    run_scenario,
)

REQUIRE = "MCP_ROUTER_REQUIRE_CONFORMANCE"
NOT_INSTALLED = "(the suite is not installed)"

SUITE = find_suite()
LISTED = auth_scenarios(SUITE) if SUITE is not None else {}
SCENARIOS = [name for name in LISTED if name not in SDK_GAPS] or [NOT_INSTALLED]


@pytest.fixture(scope="module")
def suite() -> Suite:
    if SUITE is None:
        message = f"the conformance suite's 0.2.0 line is not installed: {INSTALL_HINT}"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 and {message}")
        pytest.skip(message)
    return SUITE


@pytest.mark.processes
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_router_passes_the_scenario(suite: Suite, scenario: str, tmp_path: Path) -> None:
    outcome = run_scenario(suite, "router", scenario, tmp_path)
    assert outcome.ok, f"{scenario}: failed checks: {list(outcome.failures)}"


def test_the_suite_has_the_authorization_scenarios(suite: Suite) -> None:
    assert len(LISTED) >= 30
    stale = sorted(set(SDK_GAPS) - set(LISTED))
    assert stale == [], f"not scenarios of the suite any more: drop them from SDK_GAPS: {stale}"


def test_the_committed_table_is_rendered_from_the_committed_results() -> None:
    assert TABLE.read_text(encoding="utf-8") == render(load(OUT))
