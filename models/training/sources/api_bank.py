"""API-Bank's level-3 training set: a user's request, the APIs an assistant found for it with
its tool searcher, and the calls it then made.

Each line of `lv3-api-train.json` is one step of a dialogue: the request ("Find a
cardiologist in Los Angeles for a check-up appointment."), the steps so far (each
`ToolSearcher` call answered with the API it found: a name, a description, typed
parameters, none marked required) and the next call. The APIs a request called, other than
the searcher, are its gold tools, one group each, in the order called; an API is a tool of
the server `api-bank`.
The dialogues were written by LLM agents from API descriptions (the paper's multi-agent
synthesis), not by users, but the requests state goals, not operations.

The level-1 and level-2 training files are not in the repository's readable files here. The
set's level-3 test data (`test-data/level-3.json`: each request with every call made) is its
own evaluation, converted only on request.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.training.sources.records import Part, ToolKey, distinct, query_row, read_json, tool_row

NAME = "api_bank"
SERVER = "api-bank"
SEARCHER = "ToolSearcher"
_REQUEST = re.compile(r"\nUser: (.*?)(?:TIME: [^\n]*)?\n")
_FOUND = re.compile(r"->(\{'name'.*?)\n")
_CALL = re.compile(r"API-Request: \[(\w+)\(")


def _found(text: str) -> list[dict[str, Any]]:
    """The APIs the searcher returned in a step's history (a Python literal each)."""
    found = []
    for literal in _FOUND.findall(text):
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, dict) and value.get("name") and value.get("description"):
            found.append(value)
    return found


def _tool(api: dict[str, Any]) -> dict[str, Any]:
    given = api.get("input_parameters")
    # a few found APIs list their parameters as a set of names, with no type or description
    listed = given.items() if isinstance(given, dict) else ()
    parameters = {str(k): v for k, v in listed if isinstance(v, dict)}
    return tool_row(SERVER, api["name"], api["description"], parameters, ())


def _add_test_dialogue(
    dialogue: dict[str, Any], tools: dict[str, dict[str, Any]], called: dict[str, list[str]]
) -> None:
    names = called.setdefault(" ".join(dialogue["requirement"].split()), [])
    for step in dialogue["apis"]:
        if step["api_name"] == SEARCHER:
            found = (step.get("output") or {}).get("output")
            if isinstance(found, dict) and found.get("name") and found.get("description"):
                tools.setdefault(found["name"], _tool(found))
        elif step["api_name"] not in names:
            names.append(step["api_name"])


def convert(root: Path, paths: Sequence[str], split: str) -> Part:
    """The APIs found in the dialogues, and each request with the APIs it called."""
    tools: dict[str, dict[str, Any]] = {}
    called: dict[str, list[str]] = {}
    for path in paths:
        for step in read_json(root / path):
            if "apis" in step:  # the test data's form: the request, then every call made
                _add_test_dialogue(step, tools, called)
                continue
            request = _REQUEST.search(step["input"])
            if request is None:
                continue
            for api in _found(step["input"]):
                tools.setdefault(api["name"], _tool(api))
            call = _CALL.match(step["output"].strip())
            text = request.group(1).strip()
            names = called.setdefault(text, [])
            if call and call.group(1) != SEARCHER and call.group(1) not in names:
                names.append(call.group(1))
    queries = []
    for number, (text, names) in enumerate(called.items()):
        groups: list[list[ToolKey]] = [[(SERVER, n)] for n in names if n in tools]
        if groups:
            queries.append(query_row(NAME, split, f"{NAME}-{split}-{number}", text, groups))
    return Part(list(tools.values()), distinct(queries))
