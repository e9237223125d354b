"""How `search_tools` results reach the model: full schemas as structured content, and a
compact text listing that reads easily and costs few tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from router.accounting.formats import normalise_schema
from router.readiness import Coverage, describe
from router.retrieval.types import ScoredTool

_MAX_DESCRIPTION = 300


def structured_results(
    query: str, results: Sequence[ScoredTool], coverage: Coverage | None = None
) -> dict[str, Any]:
    coverage = coverage or Coverage()
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
        "starting": list(coverage.starting),
        "down": [
            {"name": d.name, "lastError": d.last_error, "retryIn": d.retry_in, "indexed": d.indexed}
            for d in coverage.down
        ],
    }


def text_results(
    query: str, results: Sequence[ScoredTool], coverage: Coverage | None = None
) -> str:
    coverage = coverage or Coverage()
    if not results and coverage.unsearched:
        lines = [f'No tools found for "{query}" among the upstreams searched so far.']
    elif not results:
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
    notes = describe(coverage)
    if notes:
        lines.append("")
        lines.extend(notes)
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
