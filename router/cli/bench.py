"""`mcp-router bench`: the benchmark suite of a source checkout (`benchmarks/`).

The suite is not part of the installed package: it reads the checkout's data and writes
into its `benchmarks/` folder, so this command finds the checkout next to the `router`
package and runs `python -m benchmarks` there with the same options.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from router.core.errors import RouterError

CHECKOUT = Path(__file__).resolve().parent.parent.parent


def _suite(name: str) -> ModuleType | None:
    """`benchmarks.suite.<name>` from the checkout, or None when this is no checkout."""
    if not (CHECKOUT / "benchmarks" / "suite").is_dir():
        return None
    if str(CHECKOUT) not in sys.path:
        sys.path.append(str(CHECKOUT))
    return importlib.import_module(f"benchmarks.suite.{name}")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="token savings and tool-selection accuracy on the public sets (source checkout)",
        description="Runs the benchmark suite; see benchmarks/README.md.",
    )
    options = _suite("options")
    if options is not None:
        options.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    cli = _suite("cli")
    if cli is None:
        raise RouterError(
            "mcp-router bench runs from a source checkout of mcp-router (it needs benchmarks/ "
            "and the data beside it): clone the repository and run it there"
        )
    code: int = cli.run(args)
    return code
