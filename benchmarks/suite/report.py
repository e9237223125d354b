"""The bench's JSON report (schema `mcp-router.bench/1`, documented in benchmarks/README.md)
and the acceptance checks of issue 5 computed from it."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from typing import Any

from benchmarks.suite import tokens
from benchmarks.suite.options import ROOT, Options
from router.accounting.tokens import ENCODING
from router.retrieval.retriever import CANDIDATE_DEPTH

SCHEMA = "mcp-router.bench/1"
SAVED_THRESHOLD = 95.0
MIN_TOOLS = 500


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


MEASURED_CODE = ("router/", "benchmarks/suite/", "models/")


def code_state(
    measured: tuple[str, ...] = MEASURED_CODE, untracked: bool = False
) -> dict[str, Any]:
    """The code a run measures, read when it starts: HEAD, the last commit that changed
    the measured code (by default `router/`, `benchmarks/suite/`, `models/`), and uncommitted
    changes to it (new files too, with `untracked`)."""
    listing = "--untracked-files=" + ("all" if untracked else "no")
    dirty = [
        line[3:]
        for line in _git("status", "--porcelain", listing).splitlines()
        if line[3:].startswith(measured)
    ]
    return {
        "commit": _git("rev-parse", "--short", "HEAD") or None,
        "code_commit": _git("log", "-1", "--format=%h", "--", *measured) or None,
        "uncommitted_changes": dirty,
    }


def provenance() -> dict[str, Any]:
    """Which machine produced the figures, and when the run finished."""
    return {
        "finished_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.machine(),
            "cpus": os.cpu_count(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "python": platform.python_version(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
    }


def assemble(
    *,
    options: Options,
    code: dict[str, Any],
    model: str | None,
    fastmcp: tuple[str | None, str | None],
    meta: dict[str, Any],
    sets: list[dict[str, Any]],
    cold: dict[str, Any] | None,
    live: dict[str, Any] | None,
    wall_seconds: float,
) -> dict[str, Any]:
    version, skipped = fastmcp
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "run": "quick" if options.quick else "full",
        **code,
        **provenance(),
        "wall_seconds": round(wall_seconds, 1),
        "model": model,
        "encoding": ENCODING,
        "settings": {
            "sets": list(options.sets),
            "distractors": list(options.sizes),
            "max_queries": options.max_queries,
            "split": options.split,
            "scale_queries": options.scale_queries,
            "seed": options.seed,
            "catalog_limit": options.catalog_limit,
            "depth": CANDIDATE_DEPTH,
            "k_values": list(tokens.K_VALUES),
            "budgets": list(tokens.BUDGETS),
            "formats": list(tokens.FORMATS),
        },
        "fastmcp": {"version": version, "skipped": skipped},
        "meta_tools": meta,
        "sets": sets,
        "cold_build": cold,
        "live": live,
    }
    report["acceptance"] = acceptance(report)
    return report


def _check(set_name: str, point: dict[str, Any], distractors: int) -> dict[str, Any]:
    k5 = point["tokens"]["k"]["5"]
    saved = {fmt: k5[fmt]["with_meta_saved_percent"] for fmt in tokens.FORMATS}
    methods = point["methods"]
    recall = {
        name: methods[name]["metrics"]["recall@5"]
        for name in ("hybrid", "bm25", "fastmcp_bm25")
        if name in methods
    }
    router = recall.get("hybrid")
    margins = point.get("recall@5_margins", {})
    # FastMCP's search: the whole 95% interval of the margin above zero; BM25: the mean
    beats_peer = "vs_fastmcp_bm25" not in margins or margins["vs_fastmcp_bm25"]["low"] > 0
    beats_bm25 = "vs_bm25" not in margins or margins["vs_bm25"]["mean"] >= 0
    passed = min(saved.values()) >= SAVED_THRESHOLD and beats_peer and beats_bm25
    return {
        "set": set_name,
        "distractors": distractors,
        "tools": point["tools"],
        "saved_percent_k5_with_meta": saved,
        "recall@5": recall,
        "recall@5_margin": margins,
        "pass": passed and router is not None,
    }


def acceptance(report: dict[str, Any]) -> dict[str, Any]:
    """k = 5 saves at least 95% of the full list's tokens (meta-tools included, every
    format), the router's Recall@5 is at least BM25's, and the 95% paired-bootstrap interval
    of its margin over FastMCP's search lies above zero, on every set whose catalog has 500
    tools or more, at its own size and at every distractor count."""
    checks = []
    for s in report["sets"]:
        points = [(0, s["base"]), *((p["distractors"], p) for p in s["scaled"])]
        checks += [_check(s["name"], p, n) for n, p in points if p["tools"] >= MIN_TOOLS]
    return {
        "saved_threshold_percent": SAVED_THRESHOLD,
        "min_catalog_tools": MIN_TOOLS,
        "fastmcp_compared": report["fastmcp"]["version"] is not None,
        "checks": checks,
        "pass": all(c["pass"] for c in checks),
    }
