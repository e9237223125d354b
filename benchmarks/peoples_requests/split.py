"""`python -m benchmarks.peoples_requests.split [--second]`: a people's set's dev and test
halves, and the manifest of its files' sha256 (`--second`: benchmarks/data/peoples_requests_2/).

The halves come from `requests.jsonl` (the whole set as it was written) with a fixed seed,
stratified by each request's `server` (the server of its first gold tool): each server's
requests are shuffled and cut in two, and where a server has an odd number the extra one
goes to dev and test in turn, so the halves differ in size by at most one. The same file
always gives the same halves; the test half is never used for tuning.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "peoples_requests"
SEED = 35
SPLITS = ("dev", "test")
MANIFEST = "manifest.json"
RECORDED = ("servers.json", "catalog.jsonl", "requests.jsonl", "dev.jsonl", "test.jsonl")
"""The files whose sha256 the manifest records (the README is prose, not data)."""


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def split(requests: Sequence[dict[str, Any]], seed: int = SEED) -> dict[str, list[str]]:
    """The ids of each half, stratified by `server`, each half in id order."""
    strata: dict[str, list[str]] = defaultdict(list)
    for request in requests:
        strata[str(request["server"])].append(str(request["id"]))
    rng = random.Random(seed)
    halves: dict[str, list[str]] = {name: [] for name in SPLITS}
    odd = 0
    for stratum in sorted(strata):
        ids = sorted(strata[stratum])
        rng.shuffle(ids)
        cut = len(ids) // 2
        if len(ids) % 2:
            cut += 1 - odd % 2  # the extra one: dev, then test, then dev...
            odd += 1
        halves["dev"].extend(ids[:cut])
        halves["test"].extend(ids[cut:])
    return {name: sorted(ids) for name, ids in halves.items()}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(data: Path = DATA, recorded: Sequence[str] = RECORDED) -> dict[str, Any]:
    """What `manifest.json` records: the seed, each half's size, each file's sha256."""
    sizes = {name: len(read_lines(data / f"{name}.jsonl")) for name in SPLITS}
    return {
        "seed": SEED,
        "stratified_by": "server",
        "requests": len(read_lines(data / "requests.jsonl")),
        "sizes": sizes,
        "sha256": {name: sha256_of(data / name) for name in recorded},
    }


def write(data: Path = DATA, recorded: Sequence[str] = RECORDED) -> dict[str, Any]:
    """Write both halves and the manifest from `requests.jsonl`; return the manifest."""
    lines = (data / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {str(json.loads(line)["id"]): line for line in lines if line}
    halves = split([json.loads(line) for line in by_id.values()])
    for name, ids in halves.items():
        text = "".join(by_id[identifier] + "\n" for identifier in ids)
        (data / f"{name}.jsonl").write_text(text, encoding="utf-8")
    written = manifest(data, recorded)
    (data / MANIFEST).write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """`--second`: the second set (benchmarks/data/peoples_requests_2/)."""
    from benchmarks.peoples_requests import second

    second_set = bool(argv) and "--second" in (argv or [])
    recorded = write(second.DATA, second.RECORDED) if second_set else write()
    print(f"dev {recorded['sizes']['dev']}, test {recorded['sizes']['test']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
