"""A pytest plugin that holds `make check` to tests that start no process.

`make check` runs `pytest -m "not processes and not exclusive"` with
`MCP_ROUTER_NO_PROCESSES=1`: then starting a process (a subprocess, an asyncio or anyio
child, a multiprocessing worker, a fork) fails with an error naming the marker, so a test
that starts a router, an upstream or a database without the `processes` marker is caught
in the inner loop rather than slowing it down. Applied while the tests run, in the process
that runs them. `MCP_ROUTER_NO_PROCESSES=record:PATH` lets processes start and appends to
PATH.WORKER, for each one, the test running then and its phase (how the markers were first
placed: a start in a setup marks the module, one in a call the test).
"""

from __future__ import annotations

import multiprocessing.util
import os
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import Any, NoReturn

import pytest

ENV = "MCP_ROUTER_NO_PROCESSES"
MESSAGE = (
    "this test starts a process; mark it `@pytest.mark.processes` (or its module's "
    "`pytestmark`): `make check` runs only tests that start none"
)


class ProcessStarted(RuntimeError):
    """A test without the `processes` marker started a process under `make check`."""


_STARTS = (
    (subprocess.Popen, "_execute_child"),
    (multiprocessing.util, "spawnv_passfds"),
    (os, "fork"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
)


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise ProcessStarted(MESSAGE)


def _recording(original: Any, log: Path) -> Any:
    def started(*args: Any, **kwargs: Any) -> Any:
        with log.open("a", encoding="utf-8") as out:
            out.write(os.environ.get("PYTEST_CURRENT_TEST", "(outside a test)") + "\n")
        return original(*args, **kwargs)

    return started


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, None, None]:
    """Around the tests alone: pytest-xdist itself starts processes before them (the
    controller its workers, a worker `uname` for its platform report)."""
    mode = os.environ.get(ENV, "")
    if mode != "1" and not mode.startswith("record:"):
        yield
        return
    worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
    log = Path(f"{mode.removeprefix('record:')}.{worker}")
    patches = pytest.MonkeyPatch()
    for owner, name in _STARTS:
        original = getattr(owner, name)
        patches.setattr(owner, name, _refuse if mode == "1" else _recording(original, log))
    try:
        yield
    finally:
        patches.undo()
