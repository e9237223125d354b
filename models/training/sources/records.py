"""What every converter hands back: tools and queries in the project's dataset format.

The format is the one `mcp-router eval` reads (docs/architecture.md#datasets-and-metrics):
a tool is `{"server", "name", "description", "inputSchema"}` (plus `server_description`
where the source says what its service is for), a query is `{"id", "query", "gold",
"gold_groups", "split", "set"}`. Converters build these from the source's own words only;
nothing is rewritten, generated or sampled, so the same files give the same lines.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ToolKey = tuple[str, str]


@dataclass(slots=True)
class Part:
    """One split of one set, converted: its tools and its queries, in source order."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: Part) -> Part:
        """Both parts' queries, and each tool once (the first definition wins)."""
        seen = {(t["server"], t["name"]) for t in self.tools}
        tools = [*self.tools, *(t for t in other.tools if (t["server"], t["name"]) not in seen)]
        return Part(tools, [*self.queries, *other.queries])


def tool_row(
    server: str,
    name: str,
    description: str,
    parameters: Mapping[str, Mapping[str, Any]],
    required: Iterable[str],
    server_description: str = "",
) -> dict[str, Any]:
    """A catalog line; the parameters keep the source's own types and descriptions."""
    properties = {str(k): dict(v) for k, v in parameters.items()}
    row: dict[str, Any] = {
        "server": server,
        "name": name,
        "description": description.strip(),
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": [r for r in required if r in properties],
        },
    }
    if server_description:
        row["server_description"] = server_description.strip()
    return row


def query_row(
    set_name: str,
    split: str,
    identifier: str,
    text: str,
    groups: Sequence[Sequence[ToolKey]],
) -> dict[str, Any]:
    """A query line: `gold` is each group's first member, `gold_groups` every member."""
    return {
        "id": identifier,
        "query": " ".join(text.split()),
        "gold": [{"server": group[0][0], "name": group[0][1]} for group in groups],
        "gold_groups": [[{"server": s, "name": n} for s, n in group] for group in groups],
        "split": split,
        "set": set_name,
    }


def distinct(queries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queries with each (text, gold) pair once: dialogues repeat their openings."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for query in queries:
        key = (query["query"].casefold(), json.dumps(query["gold"], sort_keys=True))
        if key not in seen:
            seen.add(key)
            kept.append(query)
    return kept


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
