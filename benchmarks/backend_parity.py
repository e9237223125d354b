"""The default ONNX embedder against the PyTorch (sentence-transformers) one, on every public
query set: Recall@5 must stay within 0.01.

    python -m benchmarks.backend_parity [--data ../shared/data] [--sets ...] [--table-only]

Runs `mcp-router eval` with `sentence-transformers/all-MiniLM-L6-v2` (the same model in fp32
on PyTorch; needs the `st` extra) into `benchmarks/results/eval-<set>-torch.json`, reads the
default model's `eval-<set>.json` (from `python -m benchmarks.eval_sets`, run first), and
writes `benchmarks/results/backend-parity.json` and the table between the parity markers of
`benchmarks/README.md`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.eval_sets import RESULTS, ROOT, SETS, run_set
from benchmarks.provenance import head_commit
from benchmarks.suite.readme import replace_between

README = Path(__file__).resolve().parent / "README.md"
OUT = RESULTS / "backend-parity.json"
START, END = "<!-- parity:start -->", "<!-- parity:end -->"
TORCH_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODES = ("hybrid", "dense")
TOLERANCE = 0.01


def compare(name: str) -> dict[str, Any]:
    default = json.loads((RESULTS / f"eval-{name}.json").read_text(encoding="utf-8"))
    torch = json.loads((RESULTS / f"eval-{name}-torch.json").read_text(encoding="utf-8"))
    runs: dict[str, Any] = {}
    for mode in MODES:
        ours = next(r for r in default["runs"] if r["mode"] == mode)["metrics"]
        theirs = next(r for r in torch["runs"] if r["mode"] == mode)["metrics"]
        delta = ours["recall@5"] - theirs["recall@5"]
        runs[mode] = {
            "recall@5": {"onnx": ours["recall@5"], "torch": theirs["recall@5"]},
            "all_hit@5": {"onnx": ours["all_hit@5"], "torch": theirs["all_hit@5"]},
            "delta_recall@5": round(delta, 4),
            "within_tolerance": abs(delta) <= TOLERANCE,
        }
    return {
        "set": name,
        "queries": default["queries"]["count"],
        "models": {"onnx": default["model"], "torch": torch["model"]},
        "runs": runs,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"Recall@5 of the default ONNX int8 embedder against the same model in fp32 on "
        f"PyTorch, run at commit `{result['commit']}` (tolerance ±{TOLERANCE}).",
        "",
        "| set | queries | mode | Recall@5 ONNX | Recall@5 torch | difference | within ±0.01 |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry in result["sets"]:
        for mode, run in entry["runs"].items():
            recall = run["recall@5"]
            lines.append(
                f"| {entry['set']} | {entry['queries']:,} | {mode} | {recall['onnx']:.3f} "
                f"| {recall['torch']:.3f} | {run['delta_recall@5']:+.3f} "
                f"| {'yes' if run['within_tolerance'] else 'no'} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.backend_parity")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--table-only", action="store_true", help="re-render from results/")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    if args.table_only:
        result = json.loads(OUT.read_text(encoding="utf-8"))
    else:
        for name in names:
            out = RESULTS / f"eval-{name}-torch.json"
            run_set(args.data, name, None, model=TORCH_MODEL, modes=",".join(MODES), out=out)
        result = {
            "benchmark": "mcp-router.backend-parity/1",
            "commit": head_commit(),
            "tolerance": TOLERANCE,
            "sets": [compare(name) for name in names],
        }
        OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    README.write_text(replace_between(text, START, END, table(result)), encoding="utf-8")
    print(table(result), file=sys.stderr)
    within = [run["within_tolerance"] for s in result["sets"] for run in s["runs"].values()]
    return 0 if all(within) else 1


if __name__ == "__main__":
    raise SystemExit(main())
