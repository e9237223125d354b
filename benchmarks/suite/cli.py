"""`python -m benchmarks` / `mcp-router bench`: run the suite, write JSON, table, charts."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.suite.options import ROOT, Options, add_arguments, from_args

README = ROOT / "benchmarks" / "README.md"
STEM = "bench"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="token savings and tool-selection accuracy"
    )
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run (or with --table-only re-render) and write every output."""
    options = from_args(args)
    path = options.out / f"{STEM}.json"
    if args.table_only:
        report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    else:
        from benchmarks.suite.runner import run as run_suite

        report = run_suite(options)
        options.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    write_outputs(report, options, path)
    return 0 if report["acceptance"]["pass"] or options.quick else 1


def write_outputs(report: dict[str, Any], options: Options, path: Path) -> None:
    from benchmarks.suite import charts, readme

    drawn: list[Path] = []
    if options.charts:
        drawn = charts.write_charts(report, options.out, STEM)
        if not charts.available():
            print(
                "charts skipped: matplotlib is not installed (pip install -e '.[bench]')",
                file=sys.stderr,
            )
    section = readme.section(report, drawn, README if options.readme else path)
    (options.out / f"{STEM}.md").write_text(section + "\n", encoding="utf-8")
    if options.readme:
        readme.update(README, report, drawn)
    if report["fastmcp"]["skipped"]:
        print(f"FastMCP baseline skipped: {report['fastmcp']['skipped']}", file=sys.stderr)
    print(
        f"wrote {path}, {options.out / (STEM + '.md')}" + (f", {README}" if options.readme else ""),
        file=sys.stderr,
    )
    print(section)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return run(build_parser().parse_args(argv))
