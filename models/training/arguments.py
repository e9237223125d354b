"""Requests that carry argument values, made from a tool's own schema.

Users ask for a call, not for a tool: "find the area of a triangle with a base of 10 and a
height of 5", "on Semgrep, scan main.cpp with the rules file rules.yaml". The other
synthetic queries (`models.training.data.synthetic_queries`) restate the tool's words; these
add what a request carries beside them: parameter names in the user's words and concrete
values the model must learn to read past. A value comes from the parameter itself where it
offers one (an `enum` member, a `default`, an `examples` entry), else from its JSON type, else
from what its name says it holds (a date, a path, a city, an identifier). Nothing is random
beyond the seeded generator passed in, so the same tools give the same requests.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from router.core.catalog import split_identifier

_TEMPLATES: tuple[str, ...] = (
    "{request} with {pairs}",
    "{request} where {pairs}",
    "{request} for {values}",
    "{request}, {pairs}",
    "{request} using {pairs}",
)
"""How a request and its arguments join. `{pairs}` reads "base 10 and height 5" (or "base is
10" after "where"); `{values}` gives the values alone, as users often do."""

_CITIES = ("Paris", "Tokyo", "San Francisco", "Berlin", "Toronto", "Sydney", "Mumbai")
_PEOPLE = ("Alice", "Bob Smith", "Maria Garcia", "Chen Wei", "john.doe")
_TOPICS = ("climate change", "machine learning", "quarterly revenue", "rust async", "jazz")
_WORDS = ("alpha", "weekly report", "project-x", "demo", "main", "v2")

# (words in a parameter's name, the values such a parameter holds)
_BY_NAME: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (frozenset({"city", "location", "place", "region", "destination", "origin"}), _CITIES),
    (frozenset({"country"}), ("France", "Japan", "Brazil", "Canada", "India")),
    (
        frozenset({"date", "day", "since", "until", "start", "end", "from", "to", "time"}),
        ("2024-03-15", "2023-11-02", "next Monday", "2025-01-01", "yesterday"),
    ),
    (frozenset({"email", "mail"}), ("alice@example.com", "team@acme.io")),
    (
        frozenset({"url", "uri", "link", "href", "endpoint", "website"}),
        ("https://example.com/docs",),
    ),
    (
        frozenset({"path", "file", "filename", "filepath", "dir", "directory", "folder"}),
        ("reports/summary.txt", "/tmp/data.csv", "src/main.py", "notes.md"),
    ),
    (frozenset({"repo", "repository"}), ("octocat/hello-world", "acme/api")),
    (frozenset({"owner", "user", "username", "author", "name", "person"}), _PEOPLE),
    (frozenset({"query", "search", "keyword", "keywords", "term", "q", "topic"}), _TOPICS),
    (frozenset({"symbol", "ticker", "stock"}), ("AAPL", "TSLA", "MSFT")),
    (frozenset({"language", "lang", "locale"}), ("en", "French", "es")),
    (frozenset({"currency"}), ("USD", "EUR", "JPY")),
    (frozenset({"id", "identifier", "key", "uuid"}), ("12345", "abc-789", "98f2c1")),
    (frozenset({"code", "script", "sql", "expression", "formula"}), ("x**2 + 1", "SELECT 1")),
)


def _type(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for option in spec.get("anyOf") or ():
            if isinstance(option, Mapping) and option.get("type") not in (None, "null"):
                kind = option.get("type")
                break
    return str(kind or "string").lower()


def _plain(value: Any) -> str | None:
    """A value as a user writes it, or None for values nobody types (objects, empty)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        text = value.strip()
        return text if 0 < len(text) <= 40 and "\n" not in text else None
    return None


def parameter_value(name: str, spec: Mapping[str, Any], rng: random.Random) -> str | None:
    """A value for the parameter `name`, or None where no user would type one."""
    for offered in (spec.get("enum"), spec.get("examples")):
        if isinstance(offered, list):
            choices = [v for v in (_plain(o) for o in offered) if v]
            if choices:
                return rng.choice(choices)
    default = _plain(spec.get("default"))
    if default:
        return default
    kind = _type(spec)
    if kind in {"boolean", "object", "dict", "array", "list", "tuple", "hashmap", "null"}:
        return None
    if kind in {"integer", "int", "long"}:
        return str(rng.choice((3, 5, 10, 25, 42, 100, 2024)))
    if kind in {"number", "float", "double"}:
        return rng.choice(("2.5", "0.75", "10", "3.14", "150"))
    words = set(split_identifier(name).lower().split())
    for keys, values in _BY_NAME:
        if words & keys:
            return rng.choice(values)
    return f"'{rng.choice(_WORDS)}'"


def argument_request(
    request: str, properties: Sequence[tuple[str, Mapping[str, Any]]], rng: random.Random
) -> str | None:
    """`request` with one to three of the tool's arguments given values, or None."""
    valued = [
        (split_identifier(name).lower(), value)
        for name, spec in properties
        if (value := parameter_value(name, spec, rng)) is not None
    ]
    if not valued or not request:
        return None
    chosen = valued[: rng.choice((1, 2, 2, 3))]
    template = rng.choice(_TEMPLATES)
    joiner = " is " if template.startswith("{request} where") else " "
    pairs = " and ".join(f"{words}{joiner}{value}" for words, value in chosen)
    values = " and ".join(value for _, value in chosen)
    return template.format(request=request, pairs=pairs, values=values)
