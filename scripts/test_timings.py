"""Where the test suite's time goes: tables for docs/testing.md from a recorded run.

    make unit      # writes test-output/timings-parallel.json and timings-exclusive.json
    python scripts/test_timings.py test-output/timings-*.json --label "make test"
    python scripts/test_timings.py test-output/timings-*.json --slowest   # what CI prints

A run is recorded by the plugin tests/support/timings.py (MCP_ROUTER_TEST_TIMINGS=PATH);
the runs given are read as one (`make unit` runs the suite in two pytest sessions). The tables
replace what lies between `<!-- timings:NAME -->` and `<!-- /timings:NAME -->` in
docs/testing.md, NAME being the label's slug, so the page keeps a baseline and the latest
run side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "testing.md"
ROWS = 25


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def merged(paths: list[Path]) -> dict[str, Any]:
    """Runs made one after the other, as one: their wall times add up."""
    runs = [json.loads(path.read_text()) for path in paths]
    return {
        "wall_s": sum(float(run["wall_s"]) for run in runs),
        "workers": max(int(run.get("workers") or 0) for run in runs),
        "reports": [report for run in runs for report in run["reports"]],
    }


def by_test(reports: list[dict[str, Any]], field: str) -> dict[str, float]:
    """`field` (duration or cpu_s) summed over each test's setup, call and teardown."""
    summed: dict[str, float] = defaultdict(float)
    for report in reports:
        summed[report["nodeid"]] += float(report.get(field) or 0.0)
    return summed


def by_file(per_test: dict[str, float]) -> dict[str, float]:
    summed: dict[str, float] = defaultdict(float)
    for nodeid, value in per_test.items():
        summed[_file_of(nodeid)] += value
    return summed


def slowest(run: dict[str, Any]) -> str:
    """The slowest tests and the total, for the end of a CI log."""
    per_test = by_test(run["reports"], "duration")
    lines = [f"The {ROWS} slowest tests (setup, call and teardown):"]
    for nodeid, seconds in sorted(per_test.items(), key=lambda item: -item[1])[:ROWS]:
        lines.append(f"{seconds:8.1f} s  {nodeid}")
    lines.append(
        f"{len(per_test)} tests, {run['wall_s']:.0f} s of wall time, "
        f"{sum(per_test.values()):.0f} s of test time (budget: docs/testing.md)"
    )
    return "\n".join(lines)


def tables(run: dict[str, Any], label: str) -> str:
    reports: list[dict[str, Any]] = run["reports"]
    per_test = by_test(reports, "duration")
    cpu_of_test = by_test(reports, "cpu_s")
    cpu_of_file = by_file(cpu_of_test)
    tests_in_file = Counter(_file_of(nodeid) for nodeid in per_test)
    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    fixtures: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    outcomes: dict[str, str] = {}
    phase = {"setup": 0, "call": 1, "teardown": 2}
    for report in reports:
        nodeid = report["nodeid"]
        per_file[_file_of(nodeid)][phase[report["when"]]] += float(report["duration"])
        if report["when"] == "call" or report["outcome"] != "passed":
            outcomes[nodeid] = report["outcome"]
        for name, scope, where, took in report["fixtures"]:
            fixtures[(name, scope, where)].append(float(took))
    busy = sum(per_test.values())
    cpu_total = sum(cpu_of_test.values())
    counts: dict[str, int] = defaultdict(int)
    for outcome in outcomes.values():
        counts[outcome] += 1
    lines = [
        f"**{label}**: {len(per_test)} tests ("
        + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
        + f"), {run['wall_s']:.0f} s of wall time, {busy:.0f} s of test time"
        + (f", {cpu_total:.0f} s of CPU" if cpu_total else "")
        + (f" over {run['workers']} workers" if run.get("workers") else " in one process")
        + ".",
        "",
        f"The {ROWS} slowest files (setup, call and teardown summed over their tests):",
        "",
        "| file | tests | total s | setup s | call s | teardown s | CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    ranked_files = sorted(per_file.items(), key=lambda item: -sum(item[1]))
    for file, (setup, call, teardown) in ranked_files[:ROWS]:
        total = setup + call + teardown
        lines.append(
            f"| `{file}` | {tests_in_file[file]} | {total:.1f} | {setup:.1f} "
            f"| {call:.1f} | {teardown:.1f} | {cpu_of_file[file]:.1f} |"
        )
    lines += [
        "",
        f"The {ROWS} costliest fixtures (each set-up's time, summed over its set-ups):",
        "",
        "| fixture | scope | defined in | set-ups | total s | longest s |",
        "|---|---|---|---:|---:|---:|",
    ]
    ranked_fixtures = sorted(fixtures.items(), key=lambda item: -sum(item[1]))
    for (name, scope, where), times in ranked_fixtures[:ROWS]:
        lines.append(
            f"| `{name}` | {scope} | `{where or 'tests/'}` | {len(times)} "
            f"| {sum(times):.1f} | {max(times):.1f} |"
        )
    lines += [
        "",
        f"The {ROWS} slowest tests:",
        "",
        "| test | s | CPU s |",
        "|---|---:|---:|",
    ]
    for nodeid, seconds in sorted(per_test.items(), key=lambda item: -item[1])[:ROWS]:
        lines.append(f"| `{nodeid}` | {seconds:.1f} | {cpu_of_test[nodeid]:.1f} |")
    if cpu_total:
        lines += [
            "",
            f"The {ROWS} files that use the most CPU (the process running the test and the "
            "children it waited for):",
            "",
            "| file | CPU s | share |",
            "|---|---:|---:|",
        ]
        for file, cpu in sorted(cpu_of_file.items(), key=lambda item: -item[1])[:ROWS]:
            lines.append(f"| `{file}` | {cpu:.1f} | {100 * cpu / cpu_total:.1f}% |")
    return "\n".join(lines)


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def write(page: Path, name: str, body: str) -> None:
    start, end = f"<!-- timings:{name} -->", f"<!-- /timings:{name} -->"
    text = page.read_text() if page.exists() else ""
    block = f"{start}\n{body}\n{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    page.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "timings", type=Path, nargs="+", help="the JSON that tests/support/timings.py wrote"
    )
    parser.add_argument("--label", default="latest", help="names the run and its block")
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--print", action="store_true", help="print the tables, write nothing")
    parser.add_argument("--slowest", action="store_true", help="print the slowest tests only")
    args = parser.parse_args()
    run = merged(args.timings)
    if args.slowest:
        sys.stdout.write(slowest(run) + "\n")
        return
    body = tables(run, args.label)
    if args.print:
        sys.stdout.write(body + "\n")
    else:
        write(args.page, slug(args.label), body)


if __name__ == "__main__":
    main()
