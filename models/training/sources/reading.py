"""The converted sets as `models.training.data --real-requests` reads them back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.training.sources import TEST
from models.training.sources.records import read_json, read_jsonl
from router.evaluation.dataset import Query, load_queries


@dataclass(frozen=True, slots=True)
class RealSet:
    """One converted set: its tools (catalog lines), its queries, where they came from."""

    name: str
    tools: list[dict[str, Any]]
    queries: list[Query]
    source: dict[str, Any]
    files: tuple[Path, ...]


def read_sets(folder: Path, names: Sequence[str] | None = None) -> list[RealSet]:
    """The sets `names` of a folder written by `python -m models.training.sources` (all of
    them by default). A test-split query there is refused: it must never be trained on."""
    written = read_json(folder / "sources.json")["sets"]
    chosen = list(written) if names is None else list(names)
    unknown = [n for n in chosen if n not in written]
    if unknown:
        known = ", ".join(written)
        raise ValueError(f"{folder}: no converted sets {', '.join(unknown)} (there: {known})")
    sets = []
    for name in chosen:
        catalog, queries = folder / name / "catalog.jsonl", folder / name / "queries.jsonl"
        loaded, _ = load_queries(queries)
        tested = [q.id for q in loaded if q.field("split") == TEST]
        if tested:
            raise ValueError(f"{queries}: test-split queries, never trained on: {tested[:3]}")
        sets.append(RealSet(name, read_jsonl(catalog), loaded, written[name], (catalog, queries)))
    return sets
