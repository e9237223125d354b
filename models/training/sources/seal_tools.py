"""Seal-Tools: requests paired with the APIs that carry them out, over 4,076 APIs in 146
fields.

The APIs (`tool.jsonl`: a name, a description, typed parameters with descriptions, the
required ones, a field such as "Healthcare/Telemedicine") and the requests (`dev.jsonl`,
`test_in_domain.jsonl`, `test_out_domain.jsonl`: the request, then each call it needs) were
written by an LLM from seed fields (self-instruct) and checked by the authors. About two in
three requests need several APIs ("find the nutrient needs of tomatoes in flowering, then
the timber available where they grow"), each a required tool here. An API's field's first
part is its server, so a field's APIs are siblings, as the tools of one MCP server are.

Only the dev split is read for training (the train split is not in the repository's
readable files here; see models/README.md); the two test splits are the set's own
evaluation, converted only on request.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.training.sources.records import Part, ToolKey, distinct, query_row, read_jsonl, tool_row

NAME = "seal_tools"
TOOLS = "Seal-Tools_Dataset/tool.jsonl"


def _tools(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        tool_row(
            row["field"].split("/", 1)[0].strip(),
            row["api_name"],
            row["api_description"],
            row.get("parameters") or {},
            row.get("required") or (),
        )
        for row in rows
    ]


def convert(root: Path, paths: Sequence[str], split: str) -> Part:
    """Every API of the set, and the split's requests with the APIs each one calls."""
    tools = _tools(read_jsonl(root / TOOLS))
    server = {tool["name"]: tool["server"] for tool in tools}
    queries = []
    for path in paths:
        if path == TOOLS:
            continue
        for row in read_jsonl(root / path):
            groups: list[list[ToolKey]] = []
            for call in row.get("calling") or ():
                key = (server.get(call.get("api", ""), ""), call.get("api", ""))
                if key[0] and [key] not in groups:
                    groups.append([key])
            if groups:
                queries.append(query_row(NAME, split, f"{NAME}-{row['id']}", row["query"], groups))
    return Part(tools, distinct(queries))
