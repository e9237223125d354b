"""Run the mcp-router CLI and write down every module it imported, when it exits.

    python tests/support/loaded_modules.py OUT serve --config servers.json

OUT gets `sorted(sys.modules)`, one name a line, at interpreter exit, so a test sees what a
command paid to import: a feature that is not configured must not be among them. OUT.gc gets
the garbage collector's state then: whether it is enabled, and how many objects are frozen.
"""

from __future__ import annotations

import atexit
import gc
import json
import sys
from pathlib import Path


def _write(out: Path) -> None:
    out.write_text("\n".join(sorted(sys.modules)) + "\n", encoding="utf-8")
    collector = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
    out.with_suffix(".gc").write_text(json.dumps(collector), encoding="utf-8")


if __name__ == "__main__":
    atexit.register(_write, Path(sys.argv[1]))
    from router.cli.main import main

    sys.exit(main(sys.argv[2:]))
