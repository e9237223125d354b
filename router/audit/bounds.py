"""Every field of an audit record within a bound, so no request makes a line long.

What a record holds comes partly from the caller (a tool name, a URI, an error naming
them, a token's `sub`), and a caller may send a megabyte for any of it. Each string is cut
to its field's bound in characters (`LIMITS`, else `DEFAULT_CHARS`), each object and list
to `MAX_ITEMS` entries, each nested key to `KEY_CHARS`. What was cut says so in the
record's `cut` object, by the field's path (`tool`, `fields.repo`, `principal.sub`): its
whole length and, for a string, the sha256 of the whole (UTF-8), so the line still
identifies what was sent. A line is JSON with non-ASCII characters escaped
(`router.audit.chain`), so a cut at a character boundary is always valid UTF-8.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

LIMITS: Mapping[str, int] = {
    "tool": 256,  # a qualified tool name (at most 64 in any catalog)
    "server": 256,
    "name": 2048,  # a resource's URI, a prompt's name
    "error": 1024,
    "principal": 512,  # its `sub` and `iss`, each
    "session": 64,
    "client": 256,
    "arguments": 80,  # "sha256:" and 64 hex digits
    "fields": 1024,  # each argument recorded in clear
}
"""The most characters of a string under each top-level field."""
DEFAULT_CHARS = 512
"""The bound of a string under any other field."""
KEY_CHARS = 128
MAX_ITEMS = 32
"""The most entries of an object or list inside a record."""


def bounded(record: Mapping[str, Any]) -> dict[str, Any]:
    """`record` with every field within its bound, and `cut` saying what was cut."""
    cut: dict[str, Any] = {}
    out = {
        key: _bound(value, LIMITS.get(key, DEFAULT_CHARS), key, cut)
        for key, value in record.items()
    }
    if cut:
        out["cut"] = cut
    return out


def _bound(value: Any, limit: int, path: str, cut: dict[str, Any]) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        items = list(value.items())
        if len(items) > MAX_ITEMS:
            cut[path] = {"items": len(items)}
        return {
            _key(str(key)): _bound(item, limit, f"{path}.{_key(str(key))}", cut)
            for key, item in items[:MAX_ITEMS]
        }
    if isinstance(value, list | tuple):
        if len(value) > MAX_ITEMS:
            cut[path] = {"items": len(value)}
        return [_bound(item, limit, f"{path}.{n}", cut) for n, item in enumerate(value[:MAX_ITEMS])]
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    whole = text.encode("utf-8", "surrogatepass")
    cut[path] = {"chars": len(text), "sha256": hashlib.sha256(whole).hexdigest()}
    return text[:limit]


def _key(key: str) -> str:
    return key[:KEY_CHARS]
