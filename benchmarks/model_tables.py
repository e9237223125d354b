"""The tool-search model's tables in benchmarks/README.md, rendered from the result files.

    python -m benchmarks.model_tables           # rewrite both tables in benchmarks/README.md
    python -m benchmarks.model_tables --loso A.json B.json C.json   # first gather the
        # leave-one-set-out runs (model_compare outputs) into results/model-loso.json

`results/model-compare-test.json` (`benchmarks.model_compare` on the test halves) gives the
trained model against its base on every set; `results/model-loso.json` gives each set ranked
by the model trained without it. Nothing in either table is typed by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.suite.bootstrap import format_margin
from benchmarks.suite.readme import replace_between

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
COMPARE = RESULTS / "model-compare-test.json"
LOSO = RESULTS / "model-loso.json"
MARKERS = {
    "compare": ("<!-- model-compare:start -->", "<!-- model-compare:end -->"),
    "loso": ("<!-- model-loso:start -->", "<!-- model-loso:end -->"),
}


def _size(size: str) -> str:
    return "own" if size == "0" else f"+{int(size) // 1000}k"


def compare_table(report: dict[str, Any]) -> str:
    lines = [
        "| set | distractors | tools | BM25 | base hybrid | **trained hybrid** | margin [95%] "
        "| base dense | trained dense | margin [95%] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    levels = []
    for name, result in report["sets"].items():
        for size, row in result["sizes"].items():
            base, ours = row["base"], row["candidate"]
            lines.append(
                f"| {name} | {_size(size)} | {row['tools']:,} | {row['bm25']['recall@5']:.3f} "
                f"| {base['hybrid']['recall@5']:.3f} | **{ours['hybrid']['recall@5']:.3f}** "
                f"| {format_margin(row['margin_recall@5_hybrid'])} "
                f"| {base['dense']['recall@5']:.3f} | {ours['dense']['recall@5']:.3f} "
                f"| {format_margin(row['margin_recall@5_dense'])} |"
            )
            if "levels_recall@5_hybrid" in row:
                levels.append((name, size, row["levels_recall@5_hybrid"]))
    text = "\n".join(lines)
    for name, size, by_level in levels:
        cells = ", ".join(
            f"{level} {values['base']:.3f} → {values['candidate']:.3f}"
            for level, values in by_level.items()
        )
        text += f"\n\n{name} by level (hybrid, {_size(size)}, base → trained): {cells}."
    return text


def loso_table(report: dict[str, Any]) -> str:
    lines = [
        "| held out | distractors | BM25 | base hybrid | trained hybrid | margin [95%] "
        "| base dense | trained dense | margin [95%] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        for name, result in run["sets"].items():
            for size, row in result["sizes"].items():
                base, ours = row["base"], row["candidate"]
                lines.append(
                    f"| {name} | {_size(size)} | {row['bm25']['recall@5']:.3f} "
                    f"| {base['hybrid']['recall@5']:.3f} | {ours['hybrid']['recall@5']:.3f} "
                    f"| {format_margin(row['margin_recall@5_hybrid'])} "
                    f"| {base['dense']['recall@5']:.3f} | {ours['dense']['recall@5']:.3f} "
                    f"| {format_margin(row['margin_recall@5_dense'])} |"
                )
    return "\n".join(lines)


def render(readme: str, compare: dict[str, Any], loso: dict[str, Any]) -> str:
    start, end = MARKERS["compare"]
    readme = replace_between(readme, start, end, compare_table(compare))
    start, end = MARKERS["loso"]
    return replace_between(readme, start, end, loso_table(loso))


def gather(runs: list[Path]) -> dict[str, Any]:
    """The leave-one-set-out runs, one model_compare output each, as one result file."""
    return {
        "schema": "mcp-router.model-loso/1",
        "runs": [json.loads(path.read_text(encoding="utf-8")) for path in runs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model_tables")
    parser.add_argument("--loso", type=Path, nargs="*", default=None)
    options = parser.parse_args(argv)
    if options.loso:
        LOSO.write_text(json.dumps(gather(options.loso), indent=2) + "\n", encoding="utf-8")
    compare = json.loads(COMPARE.read_text(encoding="utf-8"))
    loso = json.loads(LOSO.read_text(encoding="utf-8"))
    README.write_text(render(README.read_text(encoding="utf-8"), compare, loso), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
