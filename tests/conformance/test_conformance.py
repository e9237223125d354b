"""The official MCP conformance suite's server scenarios against the fixture server, directly
and through `mcp-router serve --http` in pass-through mode (`benchmarks/conformance.py` runs
both), for each line of the suite: 0.1.16 and 0.2.0.

Needs node 22 and both lines of the suite (`make conformance-deps`, that is
`bash scripts/install-conformance.sh`: into `.cache/conformance` and `.cache/conformance-next`).
Without one, its tests skip, unless `MCP_ROUTER_REQUIRE_CONFORMANCE=1` (as `.ci/run` sets)
makes the missing install a failure. The rule: every scenario that passes directly passes
through the router, but for the known gaps (`KNOWN_GAPS`, each with its reason), and the
fixture passes every scenario but its own gaps (`FIXTURE_GAPS`: the tasks extension, which the
SDK does not implement). The tasks scenarios (`tasks-*`, the 0.2.0 line) pass through the
router, which runs the fixture's calls as tasks (`benchmarks.conformance_servers.TASKS`: the
task modes a user would set), but for `TASK_GAPS`, each with its reason.
"""

from __future__ import annotations

import os

import pytest

from benchmarks.conformance import (
    INSTALL_HINT,
    KNOWN_GAPS,
    LINES,
    OUT,
    TABLE,
    TASK_GAPS,
    TASKS,
    LineRun,
    fixture_gap,
    load,
    render,
    run_line,
)

pytestmark = pytest.mark.processes

REQUIRE = "MCP_ROUTER_REQUIRE_CONFORMANCE"


@pytest.fixture(scope="module", params=list(LINES))
def run(request: pytest.FixtureRequest) -> LineRun:
    line = LINES[request.param]
    suite = line.find()
    if suite is None:
        message = f"the conformance suite's {line.name} line is not in {line.where()}"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 and {message}: {INSTALL_HINT}")
        pytest.skip(f"{message}: {INSTALL_HINT}")
    return run_line(line, suite)


def test_the_fixture_passes_every_scenario_but_its_own_gaps(run: LineRun) -> None:
    failing = {s: run.outcome("direct", s).failures for s in run.failing_directly()}
    assert {s: f for s, f in failing.items() if fixture_gap(s) is None} == {}
    assert len(run.scenarios) >= 30


def test_every_scenario_that_passes_directly_passes_through_the_router(run: LineRun) -> None:
    gaps = KNOWN_GAPS.get(run.line, {})
    regressions = {s: run.outcome("router", s).failures for s in run.regressions() if s not in gaps}
    assert regressions == {}


def test_the_known_gaps_still_fail_through_the_router(run: LineRun) -> None:
    gaps = KNOWN_GAPS.get(run.line, {})
    fixed = [s for s in gaps if s not in run.regressions()]
    assert fixed == [], "these pass through the router now (or fail directly): drop them"


def test_the_tasks_scenarios_pass_through_the_router(run: LineRun) -> None:
    gaps = TASK_GAPS.get(run.line, {})
    failing = {
        s: run.outcome("router", s).failures
        for s in run.tasks_failing_through_router()
        if s not in gaps
    }
    assert failing == {}
    if run.line == "0.2.0":
        assert len([s for s in run.scenarios if s.startswith(TASKS)]) >= 10


def test_the_tasks_gaps_still_fail_through_the_router(run: LineRun) -> None:
    gaps = TASK_GAPS.get(run.line, {})
    fixed = [s for s in gaps if s not in run.tasks_failing_through_router()]
    assert fixed == [], "these pass through the router now (or are not scenarios): drop them"


def test_the_known_gaps_name_lines_of_the_suite() -> None:
    assert set(KNOWN_GAPS) <= set(LINES)
    assert set(TASK_GAPS) <= set(LINES)


def test_the_committed_results_cover_every_line() -> None:
    assert [run.line for run in load(OUT).lines] == list(LINES)


def test_the_committed_table_is_rendered_from_the_committed_results() -> None:
    assert TABLE.read_text(encoding="utf-8") == render(load(OUT))
