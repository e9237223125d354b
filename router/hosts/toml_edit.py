"""Replace one top-level table of a TOML file, leaving every other line as it was.

Codex keeps its MCP servers as `[mcp_servers.NAME]` tables (with `[mcp_servers.NAME.env]`
sub-tables) among its other settings. `replace_tables` cuts every table under that key (and
the comment lines right above each), then appends the new ones; comments, order and layout
of the rest stay. It writes only what the router entry needs: strings, lists of strings,
numbers and booleans. Callers check the result with `tomllib`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["TomlEditError", "dumps_table", "replace_tables"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"\s*\[\[?\s*(?P<keys>[^\s\[].*?)\s*\]\]?\s*(?:#.*)?")


class TomlEditError(ValueError):
    """The file defines the table in a way this editor does not rewrite (an inline table or
    dotted keys at the top level)."""


def replace_tables(text: str, key: str, tables: Mapping[str, Mapping[str, Any]]) -> str:
    """`text` less every `[key]` / `[key.*]` table, plus `[key.NAME]` for each of `tables`."""
    lines = text.splitlines(keepends=True)
    headers = _headers(lines)
    if any(
        re.match(rf"\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*[.=]", line)
        for index, line in enumerate(lines)
        if index < (headers[0][0] if headers else len(lines))
    ):
        raise TomlEditError(f"`{key}` is set at the top level, not as [{key}.NAME] tables")
    drop: set[int] = set()
    for position, (start, keys) in enumerate(headers):
        if keys[:1] != [key]:
            continue
        end = headers[position + 1][0] if position + 1 < len(headers) else len(lines)
        first = start
        while first > 0 and lines[first - 1].lstrip().startswith("#"):
            first -= 1
        drop.update(range(first, end))
    kept = "".join(line for index, line in enumerate(lines) if index not in drop)
    kept = kept.rstrip("\n")
    added = "\n\n".join(dumps_table((key, name), values) for name, values in tables.items())
    return (kept + "\n\n" if kept else "") + added + "\n"


def dumps_table(keys: tuple[str, ...], values: Mapping[str, Any]) -> str:
    """`[a.b]` and its `key = value` lines."""
    header = ".".join(_key(part) for part in keys)
    body = "".join(f"\n{_key(name)} = {_value(value)}" for name, value in values.items())
    return f"[{header}]{body}"


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def _value(value: Any) -> str:
    # A JSON string is a valid TOML basic string: the same escapes, \uXXXX included.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _headers(lines: list[str]) -> list[tuple[int, list[str]]]:
    """`(line index, key path)` of every table header outside multi-line strings."""
    found: list[tuple[int, list[str]]] = []
    open_quote: str | None = None
    for index, line in enumerate(lines):
        if open_quote is None:
            match = _HEADER.fullmatch(line.rstrip("\r\n"))
            if match:
                found.append((index, _split_keys(match.group("keys"))))
                continue
        for quote in ('"""', "'''"):
            count = line.count(quote)
            if open_quote in (None, quote) and count % 2 == 1:
                open_quote = quote if open_quote is None else None
    return found


def _split_keys(text: str) -> list[str]:
    """`mcp_servers."my server".env` -> `["mcp_servers", "my server", "env"]`."""
    keys: list[str] = []
    for match in re.finditer(r"\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[A-Za-z0-9_-]+)\s*(?:\.|$)", text):
        part = match.group(1)
        if part.startswith('"'):
            keys.append(json.loads(part))
        elif part.startswith("'"):
            keys.append(part[1:-1])
        else:
            keys.append(part)
    return keys
