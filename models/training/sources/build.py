"""Checking the raw files against the manifest, converting them, and writing the folders.

The raw files lie under `<raw>/<set>/` in the source repository's own layout, at the commit
the manifest names: copied there from any clone with `--git <set>=<clone>` (which reads each
file at that commit), or by hand. Each file's sha256 must be the manifest's, so a different
version of a set is never converted under its name.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from models.training.sources import CONVERTERS, MANIFEST, TEST
from models.training.sources.records import Part, read_json, sha256, write_jsonl

SHARED = "shared"
"""The manifest's files that every split of a set reads (Seal-Tools' list of APIs)."""


class SourceError(Exception):
    """A raw file is missing or is not the version the manifest pins."""


def extract(clone: Path, commit: str, paths: Iterable[str], root: Path) -> None:
    """Each path as it is at `commit` in the git repository `clone`, written under `root`."""
    for path in paths:
        shown = subprocess.run(
            ["git", "-C", str(clone), "show", f"{commit}:{path}"],
            check=False,
            capture_output=True,
        )
        if shown.returncode != 0:
            message = shown.stderr.decode(errors="replace").strip()
            raise SourceError(f"{clone}: no {path} at {commit}: {message}")
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(shown.stdout)


def check(root: Path, files: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What is wrong with the raw files: each missing one, each with another sha256."""
    problems = []
    for path, pinned in files.items():
        file = root / path
        if not file.is_file():
            problems.append(f"{file}: missing")
        elif (digest := sha256(file)) != pinned["sha256"]:
            problems.append(f"{file}: sha256 {digest}, the manifest pins {pinned['sha256']}")
    return problems


def counts(part: Part) -> dict[str, int]:
    """What a converted split holds: tools, queries, and request-to-tool pairs."""
    return {
        "tools": len(part.tools),
        "queries": len(part.queries),
        "pairs": sum(len(q["gold_groups"]) for q in part.queries),
    }


def _write(folder: Path, part: Part) -> dict[str, str]:
    write_jsonl(folder / "catalog.jsonl", part.tools)
    write_jsonl(folder / "queries.jsonl", part.queries)
    return {name: sha256(folder / name) for name in ("catalog.jsonl", "queries.jsonl")}


def build(
    raw: Path,
    out: Path,
    names: Sequence[str],
    test_out: Path | None = None,
    manifest: Path = MANIFEST,
    record: bool = False,
) -> dict[str, Any]:
    """Convert the sets `names`; with `record`, pin the raw files' sha256 in the manifest
    instead of checking them (after adding a file to a set, or a set)."""
    pinned = read_json(manifest)
    summary: dict[str, Any] = {}
    for name in names:
        entry = pinned["sets"][name]
        root = raw / name
        splits = [s for s in entry["files"] if s != SHARED and (s != TEST or test_out)]
        shared = dict(entry["files"].get(SHARED, {}))
        files = {**shared, **{p: spec for s in splits for p, spec in entry["files"][s].items()}}
        if record:
            for path, spec in files.items():
                spec.update(sha256=sha256(root / path), bytes=(root / path).stat().st_size)
        elif problems := check(root, files):
            raise SourceError("\n".join(problems))
        training = Part()
        made: dict[str, dict[str, int]] = {}
        outputs: dict[str, dict[str, str]] = {}
        for split in splits:
            part = CONVERTERS[name](root, [*shared, *entry["files"][split]], split)
            made[split] = counts(part)
            if split == TEST and test_out is not None:
                outputs[TEST] = _write(test_out / name, part)
            else:
                training = training.merge(part)
        outputs["training"] = _write(out / name, training)
        if record:
            entry["counts"] = made
        summary[name] = {
            "repository": entry["repository"],
            "commit": entry["commit"],
            "licence": entry["licence"],
            "splits": made,
            "inputs": {path: spec["sha256"] for path, spec in sorted(files.items())},
            "outputs": outputs,
        }
    if record:
        manifest.write_text(json.dumps(pinned, indent=2) + "\n", encoding="utf-8")
    result = {"sets": summary}
    out.mkdir(parents=True, exist_ok=True)
    (out / "sources.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result
