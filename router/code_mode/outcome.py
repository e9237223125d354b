"""How a program's run ended, and the text the model reads of it.

The text is what the program printed, then the value of its last expression (a string as it
is, anything else as JSON); or, for a run that failed, its error with the traceback; or the
limit that stopped it, naming the setting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Outcome:
    value: Any = None
    """The last expression's value (None without one, or when the run failed)."""
    printed: str = ""
    error: str | None = None
    """The program's own uncaught error, with its traceback."""
    stopped: str | None = None
    """Why the router stopped the run: the limit, naming its setting."""
    calls: int = 0
    """`call_tool` and `search_tools` calls made."""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.error is not None or self.stopped is not None

    @property
    def kind(self) -> str:
        """`ok`, `error` or `limit`: the outcome's label in metrics and spans."""
        return "limit" if self.stopped else "error" if self.error else "ok"


def render(outcome: Outcome) -> str:
    """The text the model reads."""
    parts = [outcome.printed.rstrip("\n")] if outcome.printed.strip() else []
    if outcome.stopped is not None:
        parts.append(f"mcp-router: the program was stopped: {outcome.stopped}.")
    elif outcome.error is not None:
        parts.append(outcome.error.rstrip("\n"))
    elif outcome.value is not None:
        shown = value_text(outcome.value)
        parts.append(f"Result: {shown}" if parts else shown)
    if not parts:
        return "(no output: the program printed nothing and did not end with an expression)"
    return "\n".join(parts)


def value_text(value: Any) -> str:
    """A string as it is; anything else as JSON (what JSON cannot hold, as its repr)."""
    if isinstance(value, str):
        return value
    return json.dumps(plain(value), ensure_ascii=False)


def plain(value: Any, depth: int = 0) -> Any:
    """`value` with only JSON's types: tuples and sets as lists, other keys as strings, the
    sandbox's proxies of its objects as their attributes or repr."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if depth >= _MAX_DEPTH:
        return repr(value)
    if isinstance(value, Mapping):
        return {_key(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((plain(item, depth + 1) for item in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    attributes = getattr(value, "attributes", None)
    if isinstance(attributes, Mapping):
        return plain(attributes, depth + 1)
    return repr(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else json.dumps(plain(key)) if key is not None else "null"
