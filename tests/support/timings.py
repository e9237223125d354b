"""A pytest plugin that records where the suite's time goes, for docs/testing.md.

With `MCP_ROUTER_TEST_TIMINGS=PATH` set, each test's setup, call and teardown durations, the
CPU each phase used (its process and the children it waited for), and the time each fixture
took to set up are written to PATH as JSON when the session ends.
Fixture times are measured where the fixture runs (a pytest-xdist worker) and travel to the
controller in the setup report's `user_properties`, so one file covers every worker.
`scripts/test_timings.py` turns the file into the tables of docs/testing.md.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV = "MCP_ROUTER_TEST_TIMINGS"
TARGET = os.environ.get(ENV)
"""Where the run is written; unset, the hooks below do nothing (xdist workers inherit it)."""
_FIXTURE_KEY = "mcp_router_fixture_setup"

_pending: list[tuple[str, str, str, float]] = []
"""Fixture setups timed on this process since the last setup report: (name, scope, where
defined, seconds)."""
_reports: list[dict[str, Any]] = []
_CPU_KEY = "mcp_router_cpu"


def _cpu_so_far() -> float:
    """CPU seconds this process and its finished children have used."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_cpu_mark = _cpu_so_far()
_started = time.monotonic()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, None, None]:
    if not TARGET:
        yield
        return
    started = time.perf_counter()
    yield
    where = fixturedef.baseid or "tests/conftest.py"
    _pending.append((fixturedef.argname, fixturedef.scope, where, time.perf_counter() - started))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    global _cpu_mark
    outcome = yield
    if not TARGET:
        return
    report: pytest.TestReport = outcome.get_result()
    # tests run one after another in a process: the CPU since the last phase is this one's
    # (a child's counts once it has been waited for, which the test's own cleanup does)
    now = _cpu_so_far()
    report.user_properties.append((_CPU_KEY, round(now - _cpu_mark, 3)))
    _cpu_mark = now
    if call.when == "setup" and _pending:
        report.user_properties.append((_FIXTURE_KEY, list(_pending)))
        _pending.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not TARGET:
        return
    fixtures: list[Any] = [value for key, value in report.user_properties if key == _FIXTURE_KEY]
    cpu = [value for key, value in report.user_properties if key == _CPU_KEY]
    _reports.append(
        {
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "duration": round(report.duration, 4),
            "cpu_s": cpu[0] if cpu else None,
            "worker": _worker_of(report),
            "fixtures": [list(entry) for entry in fixtures[0]] if fixtures else [],
        }
    )


def _worker_of(report: pytest.TestReport) -> str:
    """The pytest-xdist worker that ran the test ("gw0"...), or "main" without workers."""
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    return str(getattr(gateway, "id", "main"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not TARGET or hasattr(session.config, "workerinput"):
        return  # a worker: its reports reach the controller, which writes the file
    workers = getattr(session.config.option, "numprocesses", None)
    Path(TARGET).write_text(
        json.dumps(
            {
                "wall_s": round(time.monotonic() - _started, 1),
                "workers": workers or 0,
                "exitstatus": int(exitstatus),
                "reports": _reports,
            }
        )
    )
