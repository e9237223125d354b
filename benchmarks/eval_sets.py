"""Run `mcp-router eval` over every public query set and tabulate the results.

    python -m benchmarks.eval_sets [--data ../shared/data] [--sets msc_bench,bfcl] [--limit N]

Writes `benchmarks/results/eval-<set>.json` (the eval schema, see README.md) and rewrites the
table between the markers in `benchmarks/README.md` from those files, so every figure there
comes from a committed run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from benchmarks.provenance import head_commit
from router.cli.main import main as router_main

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
README = HERE / "README.md"
RUN_FILE = RESULTS / "eval-run.json"
START, END = "<!-- eval-table:start -->", "<!-- eval-table:end -->"
SETS = ("msc_bench", "bfcl", "metatool")
MODES = "hybrid,dense,bm25"


def run_set(
    data: Path,
    name: str,
    limit: int | None,
    *,
    model: str | None = None,
    modes: str = MODES,
    out: Path | None = None,
) -> Path:
    """`mcp-router eval` on one public set; the default model and `eval-<set>.json` unless
    told otherwise."""
    out = out or RESULTS / f"eval-{name}.json"
    args = [
        "eval",
        "--catalog", str(data / name / "catalog.jsonl"),
        "--queries", str(data / name / "queries.jsonl"),
        "--mode", modes,
        "--json", str(out),
    ]  # fmt: skip
    if model is not None:
        args += ["--model", model]
    if limit is not None:
        args += ["--limit", str(limit)]
    if router_main(args) != 0:
        raise SystemExit(f"eval failed on {name}")
    return out


def _row(label: str, mode: str, n: int, metrics: dict[str, float], extra: str) -> str:
    return (
        f"| {label} | {mode} | {n} | {metrics['recall@5']:.3f} | {metrics['all_hit@5']:.3f} "
        f"| {metrics['recall@10']:.3f} | {metrics['ndcg@10']:.3f} | {metrics['mrr']:.3f} {extra}|"
    )


def table(reports: list[dict[str, Any]]) -> str:
    lines = [
        "| set | mode | queries | Recall@5 | all-hit@5 | Recall@10 | nDCG@10 | MRR "
        "| tokens@5 / full | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        name = Path(report["catalog"]["path"]).parent.name
        full = report["tokens"]["full_list"]
        for run in report["runs"]:
            extra = (
                f"| {run['tokens']['routed_mean']:.0f} / {full:,} "
                f"({run['tokens']['saved_percent']:.2f}% saved) "
                f"| {run['latency_ms']['p50']:.1f} | {run['latency_ms']['p95']:.1f} "
            )
            lines.append(_row(name, run["mode"], report["queries"]["count"], run["metrics"], extra))
    multi = [r for r in reports if r["queries"]["group_by"] == "level"]
    if multi:
        lines += [
            "",
            "Multi-tool queries (MSC-Bench level 3: tool sequences, level 4: tool graphs):",
            "",
            "| set | mode | queries | Recall@5 | all-hit@5 | Recall@10 | nDCG@10 | MRR |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for report in multi:
            name = Path(report["catalog"]["path"]).parent.name
            for level in ("level=3", "level=4"):
                for run in report["runs"]:
                    group = run["groups"].get(level)
                    if group:
                        lines.append(
                            _row(
                                f"{name} {level}", run["mode"], group["count"], group["metrics"], ""
                            )
                        )
    return "\n".join(lines)


def run_record() -> dict[str, Any]:
    """What the run measured on, recorded when it runs: --table-only must not relabel it."""
    return {
        "commit": head_commit(),
        "machine": f"{platform.machine()} {platform.system()}",
        "cpus": os.cpu_count() or 0,
        "python": platform.python_version(),
    }


def describe_run(reports: list[dict[str, Any]]) -> str:
    run = json.loads(RUN_FILE.read_text(encoding="utf-8")) if RUN_FILE.exists() else {}
    index = ", ".join(
        f"{Path(r['catalog']['path']).parent.name} {r['catalog']['tools']} tools: "
        f"{r['index']['embedded']} embedded, {r['index']['from_cache']} cached, "
        f"{r['index']['build_seconds']:.1f} s"
        for r in reports
    )
    return (
        f"Run at commit `{run.get('commit', '?')}` on {run.get('machine', '?')}, "
        f"{run.get('cpus', '?')} CPU cores, Python {run.get('python', '?')}, "
        f"model `{reports[0]['model']}`, k = 5. "
        f"Index builds: {index}."
    )


def update_readme(reports: list[dict[str, Any]]) -> None:
    text = README.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    body = f"{START}\n{describe_run(reports)}\n\n{table(reports)}\n{END}"
    README.write_text(head + body + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eval_sets")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--table-only", action="store_true", help="re-render from results/")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    paths = [
        RESULTS / f"eval-{n}.json" if args.table_only else run_set(args.data, n, args.limit)
        for n in names
    ]
    if not args.table_only:
        RUN_FILE.write_text(json.dumps(run_record()) + "\n", encoding="utf-8")
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    update_readme(reports)
    print(table(reports), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
