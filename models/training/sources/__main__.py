"""`python -m models.training.sources`: the public request sets, converted for training."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from models.training.sources import CONVERTERS, MANIFEST, TEST
from models.training.sources.build import SourceError, build, extract
from models.training.sources.records import read_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models.training.sources",
        description="Convert the public request sets of manifest.json to the dataset format.",
    )
    parser.add_argument("--raw", type=Path, default=Path(".cache/real-requests/raw"))
    parser.add_argument("--out", type=Path, default=Path(".cache/real-requests"))
    parser.add_argument("--sets", default=",".join(CONVERTERS), help="the sets to convert")
    parser.add_argument(
        "--git",
        action="append",
        default=[],
        metavar="SET=CLONE",
        help="first copy the set's files at the manifest's commit from this git clone",
    )
    parser.add_argument(
        "--test-out",
        type=Path,
        default=None,
        help="also convert the test splits, into this folder (never trained on)",
    )
    parser.add_argument(
        "--record", action="store_true", help="pin the raw files' sha256 in the manifest"
    )
    args = parser.parse_args(argv)
    names = [s for s in args.sets.split(",") if s]
    unknown = set(names) - set(CONVERTERS)
    if unknown:
        parser.error(f"unknown sets: {', '.join(sorted(unknown))} (known: {', '.join(CONVERTERS)})")
    sets = read_json(MANIFEST)["sets"]
    try:
        for spec in args.git:
            name, _, clone = spec.partition("=")
            if name not in sets or not clone:
                parser.error(f"--git wants SET=CLONE with a known set, got {spec!r}")
            entry = sets[name]
            wanted = [s for s in entry["files"] if s != TEST or args.test_out is not None]
            paths = [p for s in wanted for p in entry["files"][s]]
            extract(Path(clone), entry["commit"], paths, args.raw / name)
        result = build(args.raw, args.out, names, args.test_out, record=args.record)
    except SourceError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    summary = {name: entry["splits"] for name, entry in result["sets"].items()}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
