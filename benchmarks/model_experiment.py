"""`python -m benchmarks.model_experiment --candidate DIR`: a retrained tool-search model
against the shipped one, on the people's requests and the public sets' halves.

Each cell of `benchmarks.server_signal` (own size and +20k, dev and test, the same requests)
is ranked with the candidate and the default ranking, and set against the shipped model's
run in `results/server-signal.json` (its weight-0 rows): top-1 and hit@5, with paired
bootstrap intervals. Writes `results/model-real-requests-goals.json` (or `--out`) and, with
`--readme`, the section of benchmarks/README.md between the model-experiment markers; the
training commands go in the file as `--commands` gives them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import server_signal
from benchmarks.suite.bootstrap import format_margin, paired_margin
from benchmarks.suite.readme import replace_between

RESULTS = server_signal.ROOT / "benchmarks" / "results"
OUT = RESULTS / "model-real-requests-goals.json"
START, END = "<!-- model-experiment:start -->", "<!-- model-experiment:end -->"
FIGURES = ("top1", "hit@5")


def compare(candidate: dict[str, Any], shipped: dict[str, Any]) -> dict[str, Any]:
    """Per cell and figure: both means and the candidate's paired margin."""
    cells = {}
    for label, cell in candidate["cells"].items():
        ours, theirs = cell["per_query"]["0"], shipped["cells"][label]["per_query"]["0"]
        cells[label] = {
            f: {
                "shipped": round(float(np.mean(theirs[f])), 4),
                "candidate": round(float(np.mean(ours[f])), 4),
                "margin": paired_margin(ours[f], theirs[f], seed=server_signal.SEED),
            }
            for f in FIGURES
        }
    return cells


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Candidate `{report['candidate_model']}` against `{report['shipped_model']}`, commit "
        f"`{report['commit']}`; paired bootstrap, 95%.",
        "",
        "| cell | top-1: shipped → candidate, margin | hit@5: shipped → candidate, margin |",
        "|---|---|---|",
    ]
    for label, figures in report["cells"].items():
        cells = [
            f"{figures[f]['shipped']:.3f} → {figures[f]['candidate']:.3f}, "
            f"{format_margin(figures[f]['margin'])}"
            for f in FIGURES
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model_experiment")
    parser.add_argument("--candidate", type=Path, help="an exported ONNX model folder")
    parser.add_argument("--data", type=Path, default=server_signal.ROOT.parent / "shared" / "data")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--shipped", type=Path, default=server_signal.OUT)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--about", default="", help="what the candidate is")
    parser.add_argument("--commands", action="append", default=[], help="how it was made")
    parser.add_argument("--extra", type=Path, default=None, help="a JSON object to add (data)")
    parser.add_argument("--readme", action="store_true", help="render the README section")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if args.table_only:
        report = json.loads(args.out.read_text("utf-8"))
    else:
        if args.candidate is None:
            parser.error("--candidate is needed unless --table-only")
        run = server_signal.measure(
            argparse.Namespace(data=args.data, model=str(args.candidate), cache_dir=args.cache_dir),
            weights=(0.0,),  # the default ranking only
        )
        shipped = json.loads(args.shipped.read_text("utf-8"))
        report = {
            "schema": "mcp-router.model-experiment/1",
            "about": args.about,
            "commands": args.commands,
            **(json.loads(args.extra.read_text("utf-8")) if args.extra else {}),
            "candidate_model": run["model"],
            "shipped_model": shipped["model"],
            "commit": run["commit"],
            "cells": compare(run, shipped),
        }
        args.out.write_text(json.dumps(report, indent=1) + "\n", "utf-8")
    if args.readme or args.table_only:
        text = server_signal.README.read_text("utf-8")
        section = replace_between(text, START, END, markdown(report))
        server_signal.README.write_text(section, "utf-8")
    sys.stdout.write(markdown(report) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
