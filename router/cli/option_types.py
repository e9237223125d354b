"""Option value types shared by the commands (and `mcp-router bench`).

Each is an argparse `type=`: a bad value becomes argparse's own usage error (`mcp-router
route: error: argument -k: ...`, exit code 2) before any file is read or model loaded,
whichever command it is given to.
"""

from __future__ import annotations

import math
from argparse import ArgumentTypeError
from collections.abc import Callable

from router.retrieval.types import SearchMode

MAX_PORT = 65535


def positive_int(text: str) -> int:
    """A whole number of at least 1 (`-k`, `--budget`, `--limit`)."""
    return _bounded_int(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number of at least 0."""
    return _bounded_int(text, 0)


def non_negative_float(text: str) -> float:
    """A number of seconds, 0 or more (`--wait`)."""
    try:
        value = float(text)
    except ValueError:
        raise ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None
    if math.isnan(value) or value < 0:
        raise ArgumentTypeError(f"must be a number of seconds, 0 or more, not {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    value = _bounded_int(text, 0, what="a port number")
    if value > MAX_PORT:
        raise ArgumentTypeError(f"must be a port number from 0 to {MAX_PORT}, not {text!r}")
    return value


def query(text: str) -> str:
    """A query with some words in it: MCP's `search_tools` and `POST /v1/route` refuse a
    blank one too."""
    if not text.strip():
        raise ArgumentTypeError("the query must be non-empty: describe the task in words")
    return text


def search_modes(text: str) -> list[SearchMode]:
    """`hybrid`, or several modes separated by commas (`bm25,dense`), without repeats."""
    modes: list[SearchMode] = []
    for part in text.split(","):
        try:
            modes.append(SearchMode(part.strip()))
        except ValueError:
            choices = ", ".join(m.value for m in SearchMode)
            raise ArgumentTypeError(
                f"unknown mode {part.strip()!r} (use {choices}, or several separated by commas)"
            ) from None
    return list(dict.fromkeys(modes))


def comma_list(item: Callable[[str], int]) -> Callable[[str], tuple[int, ...]]:
    """A comma-separated list of `item` values (`--sizes 1000,5000`); empty parts are skipped."""

    def parse(text: str) -> tuple[int, ...]:
        return tuple(item(part.strip()) for part in text.split(",") if part.strip())

    return parse


def _bounded_int(text: str, least: int, what: str = "a whole number") -> int:
    try:
        value = int(text)
    except ValueError:
        raise ArgumentTypeError(f"must be {what}, not {text!r}") from None
    if value < least:
        raise ArgumentTypeError(f"must be {what} of at least {least}, not {text!r}")
    return value
