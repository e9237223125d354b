"""The launcher `benchmarks/startup.py` runs `mcp-router` through: it marks the start-up
stages in the process's CPU time and, on SIGUSR1 (sent at the `initialize` answer), writes
them and the modules imported so far to $STARTUP_PROBE_REPORT.

    STARTUP_PROBE_REPORT=probe.json python benchmarks/startup_probe.py serve --config C

It wraps, never changes, what it marks: `load_config` as `serve` calls it, `anyio.run` (the
serving starts), the store's opening (in its worker thread, that thread's own CPU time).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MARKS: dict[str, float] = {"start": time.process_time() * 1000}


def _mark(name: str) -> None:
    MARKS[name] = time.process_time() * 1000


def _report(*_: Any) -> None:
    path = os.environ.get("STARTUP_PROBE_REPORT")
    if path:
        mods = sorted(sys.modules)
        report = {
            "marks": MARKS,
            "module_count": len(mods),
            "router_modules": [m for m in mods if m == "router" or m.startswith("router.")],
        }
        with open(path + ".part", "w", encoding="utf-8") as handle:
            json.dump(report, handle)
        os.replace(path + ".part", path)


def _install() -> None:
    import anyio

    import router.cli.serve as serve

    names = vars(serve)  # patched through the module's namespace: `serve` calls it by name
    load_config = names["load_config"]

    def timed_load(*args: Any, **kwargs: Any) -> Any:
        MARKS.setdefault("config_started", time.process_time() * 1000)
        config = load_config(*args, **kwargs)
        MARKS.setdefault("config_loaded", time.process_time() * 1000)
        return config

    names["load_config"] = timed_load
    run = anyio.run

    def timed_run(*args: Any, **kwargs: Any) -> Any:
        _mark("serving")
        import router.server.lifecycle.app as app

        open_store = vars(app)["open_store"]

        def timed_open(*a: Any, **k: Any) -> Any:
            began = time.thread_time()
            try:
                return open_store(*a, **k)
            finally:
                MARKS["store_thread"] = (time.thread_time() - began) * 1000

        vars(app)["open_store"] = timed_open
        return run(*args, **kwargs)

    anyio.run = timed_run  # type: ignore[assignment]


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _report)
    from router.cli.main import main

    _mark("cli_imported")
    _install()
    sys.exit(main(sys.argv[1:]))
