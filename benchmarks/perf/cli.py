"""`python -m benchmarks.perf`: one run, one JSON (`benchmarks/results/perf.json`, schema
`mcp-router.perf/1`), and the markdown made from it between the perf markers of
docs/performance.md and benchmarks/README.md. `--table-only` re-renders the markdown from the
JSON."""

from __future__ import annotations

import datetime
import json
import logging
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.perf import checks, render, run, summary
from benchmarks.perf.options import ROOT, Options, from_args, parser
from benchmarks.suite.readme import replace_between

SCHEMA = "mcp-router.perf/1"
README = ROOT / "docs" / "performance.md"
"""Gets the short form (`summary`): one row per measurement."""
BENCH_README = ROOT / "benchmarks" / "README.md"
"""Gets every table (`render`)."""
READMES = (README, BENCH_README)
START, END = "<!-- perf:start -->", "<!-- perf:end -->"


def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measure(options: Options, argv: list[str]) -> dict[str, Any]:
    from benchmarks.suite.report import code_state

    code = code_state()
    began = time.perf_counter()
    before = _load_average()
    with tempfile.TemporaryDirectory(prefix="mcp-router-perf-") as scratch:
        sections = run.sections(options, Path(scratch))
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "run": "quick" if options.quick else "full",
        "command": shlex.join(["python", "-m", "benchmarks.perf", *argv]),
        "commit": code["commit"],
        "uncommitted_changes": code["uncommitted_changes"],
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_seconds": round(time.perf_counter() - began, 1),
        "machine": {
            "platform": f"{platform.machine()} {platform.system()}",
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_before": before,
            "load_average_after": _load_average(),
        },
        "versions": run.versions(),
        "settings": run.settings(options),
        **sections,
    }
    report["targets"] = checks.evaluate(report)
    return report


def update_readmes(report: dict[str, Any]) -> None:
    bodies = {README: summary.markdown(report), BENCH_README: render.markdown(report)}
    for readme, body in bodies.items():
        text = readme.read_text(encoding="utf-8")
        readme.write_text(replace_between(text, START, END, body), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if args.guard or args.baseline:
        from benchmarks.perf import guard

        return guard.main(args, argv)
    options = from_args(args)
    out = options.out / "perf.json"
    if args.table_only:
        update_readmes(json.loads(out.read_text(encoding="utf-8")))
        print(f"rewrote the perf sections of {', '.join(str(r) for r in READMES)}")
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    report = measure(options, argv)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2) + "\n"
    out.write_text(text, encoding="utf-8")
    if options.readme:
        update_readmes(json.loads(text))
    print(f"wrote {out}")
    for check in report["targets"]:
        result = {True: "pass", False: "FAIL", None: "not measured"}[check["pass"]]
        print(f"  {result:12} {check['what']}: {check['measured']} {check['unit']}".rstrip())
    return 0
