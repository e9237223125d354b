"""Run the mcp-router CLI with PyTorch and sentence-transformers made unimportable.

    python tests/support/no_torch.py serve --config servers.json

Any attempt to import them is written to stderr as `FORBIDDEN IMPORT <name>` and fails, so a
test proves that a command never touches them, even on a machine where they are installed
(CI installs them for the sentence-transformers backend's tests).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

FORBIDDEN = ("torch", "sentence_transformers", "transformers")


class _Forbid(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] in FORBIDDEN:
            print(f"FORBIDDEN IMPORT {fullname}", file=sys.stderr, flush=True)
            raise ImportError(f"{fullname} is forbidden on this path")
        return None


if __name__ == "__main__":
    sys.meta_path.insert(0, _Forbid())
    from router.cli.main import main

    sys.exit(main(sys.argv[1:]))
