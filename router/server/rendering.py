"""How `search_tools` results reach the model: full schemas as structured content, and a
compact text listing that reads easily and costs few tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from router.accounting.formats import normalise_schema
from router.retrieval.types import ScoredTool

_MAX_DESCRIPTION = 300


def structured_results(query: str, results: Sequence[ScoredTool]) -> dict[str, Any]:
    return {
        "query": query,
        "tools": [
            {
                "name": r.qualified_name,
                "server": r.tool.server,
                "description": r.tool.description,
                "inputSchema": normalise_schema(r.tool.input_schema),
                "score": round(r.score, 6),
            }
            for r in results
        ],
    }


def text_results(query: str, results: Sequence[ScoredTool], pending: Sequence[str] = ()) -> str:
    if not results:
        lines = [f'No tools match "{query}".']
    else:
        lines = [
            f'{len(results)} tools for "{query}". Call one with call_tool(name, arguments), '
            "or directly by name:"
        ]
        for r in results:
            lines.append("")
            lines.append(f"{r.rank}. {r.qualified_name} — {_shorten(r.tool.description)}")
            lines.extend(_parameter_lines(r.tool.input_schema))
    if pending:
        lines.append("")
        lines.append(f"(still connecting, not searched yet: {', '.join(pending)})")
    return "\n".join(lines)


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_DESCRIPTION else flat[: _MAX_DESCRIPTION - 1] + "…"


def _parameter_lines(schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return ["   arguments: none"]
    required = set(schema.get("required") or [])
    lines = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        kind = spec.get("type", "any")
        if isinstance(kind, list):
            kind = "|".join(str(k) for k in kind)
        flag = ", required" if name in required else ""
        description = spec.get("description")
        suffix = f": {_shorten(str(description))}" if description else ""
        enum = spec.get("enum")
        if isinstance(enum, list) and enum:
            suffix += f" (one of {', '.join(map(str, enum[:8]))})"
        lines.append(f"   - {name} ({kind}{flag}){suffix}")
    return lines
