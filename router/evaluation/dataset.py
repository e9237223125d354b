"""Reading the dataset format: `catalog.jsonl` and `queries.jsonl`, described in
docs/architecture.md#datasets-and-metrics.

A malformed line is a `LineProblem` with its file and line number. The caller chooses:
skip it and go on (the problems are returned), or stop at the first (a `DataError`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from router.core.catalog import Catalog, ToolSpec
from router.core.errors import DataError

T = TypeVar("T")
ToolKey = tuple[str, str]

SHOWN_PROBLEMS = 10
"""Lines named when a file yields nothing; the rest are counted."""


class OnError(StrEnum):
    SKIP = "skip"
    STOP = "stop"


@dataclass(frozen=True, slots=True)
class LineProblem:
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class Query:
    """One evaluation query: each group is one required tool, any member satisfies it."""

    id: str
    text: str
    gold_groups: tuple[tuple[ToolKey, ...], ...]
    extra: tuple[tuple[str, str], ...] = ()

    def field(self, name: str) -> str | None:
        return dict(self.extra).get(name)


class _LineError(ValueError):
    """A line that parsed as JSON but does not have the shape a record needs."""


def _read_jsonl(
    path: Path, parse: Callable[[dict[str, Any]], T], on_error: OnError
) -> tuple[list[T], list[LineProblem]]:
    items: list[T] = []
    problems: list[LineProblem] = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise _LineError(f"expected a JSON object, got {type(raw).__name__}")
            items.append(parse(raw))
        except (json.JSONDecodeError, _LineError) as exc:
            problem = LineProblem(path, number, str(exc))
            if on_error is OnError.STOP:
                raise DataError(str(problem)) from exc
            problems.append(problem)
    return items, problems


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as handle:
            yield from enumerate(handle, start=1)
    except FileNotFoundError as exc:
        raise DataError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from exc


def _text(raw: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _LineError(f"field {key!r} must be a non-empty string")
    return value


def _tool_spec(raw: dict[str, Any]) -> ToolSpec:
    schema = raw.get("inputSchema")
    if schema is not None and not isinstance(schema, dict):
        raise _LineError("field 'inputSchema' must be an object or null")
    annotations = raw.get("annotations")
    output_schema = raw.get("outputSchema")
    server_description = raw.get("server_description")
    return ToolSpec(
        server=_text(raw, "server"),
        name=_text(raw, "name"),
        description=_text(raw, "description", required=False),
        input_schema=schema,
        annotations=annotations if isinstance(annotations, dict) else None,
        title=raw.get("title") if isinstance(raw.get("title"), str) else None,
        server_description=server_description if isinstance(server_description, str) else None,
        output_schema=output_schema if isinstance(output_schema, dict) else None,
    )


def _tool_key(raw: Any) -> ToolKey:
    if not isinstance(raw, dict):
        raise _LineError("a gold tool must be an object with 'server' and 'name'")
    return (_text(raw, "server"), _text(raw, "name"))


def _query(raw: dict[str, Any]) -> Query:
    groups_raw = raw.get("gold_groups")
    if groups_raw is None:
        gold = raw.get("gold")
        if not isinstance(gold, list):
            raise _LineError("needs 'gold_groups' or 'gold' (a list of tools)")
        groups: tuple[tuple[ToolKey, ...], ...] = tuple((_tool_key(tool),) for tool in gold)
    else:
        if not isinstance(groups_raw, list) or not all(isinstance(g, list) for g in groups_raw):
            raise _LineError("field 'gold_groups' must be a list of lists of tools")
        groups = tuple(tuple(_tool_key(tool) for tool in group) for group in groups_raw)
    if not groups or any(not group for group in groups):
        raise _LineError("a query needs at least one gold tool in every group")
    identifier = raw.get("id")
    if not isinstance(identifier, str | int):
        raise _LineError("field 'id' must be a string")
    extra = tuple(
        (key, str(value))
        for key, value in raw.items()
        if key not in {"id", "query", "gold", "gold_groups"} and isinstance(value, str | int)
    )
    return Query(id=str(identifier), text=_text(raw, "query"), gold_groups=groups, extra=extra)


def load_catalog(path: Path, on_error: OnError = OnError.SKIP) -> tuple[Catalog, list[LineProblem]]:
    specs, problems = _read_jsonl(path, _tool_spec, on_error)
    if not specs:
        raise DataError(_nothing_read(path, "tools", problems))
    return Catalog.from_specs(specs), problems


def load_queries(
    path: Path, on_error: OnError = OnError.SKIP
) -> tuple[list[Query], list[LineProblem]]:
    queries, problems = _read_jsonl(path, _query, on_error)
    if not queries:
        raise DataError(_nothing_read(path, "queries", problems))
    return queries, problems


def _nothing_read(path: Path, what: str, problems: list[LineProblem]) -> str:
    """Why a file yielded nothing: empty, or each bad line with its reason (the first few)."""
    if not problems:
        return f"{path}: no {what} could be read: the file has no lines (one JSON object a line)"
    shown = "".join(f"\n  line {p.line}: {p.message}" for p in problems[:SHOWN_PROBLEMS])
    rest = len(problems) - SHOWN_PROBLEMS
    more = f"\n  ... and {rest} more malformed lines" if rest > 0 else ""
    lines = "line is" if len(problems) == 1 else f"{len(problems)} lines are"
    return f"{path}: no {what} could be read: every {lines} malformed:{shown}{more}"
