"""A tool's signature as Python, for a model that writes a program over the tools.

    async def toolbox__get_forecast(city: str, days: int = 3) -> {"result": str}:
        (the description and each parameter's, as a docstring)

The parameters come from the tool's `inputSchema` (required ones first, each optional one
with its default, or `= None`), the return shape from its `outputSchema`: what
`call_tool` gives back, the structured content, where the tool declares one, else its text
(`str`). Object shapes are written as dict displays (`{"id": int, "tags": list[str]}`), a key
the schema does not require as `NotRequired[...]`, `$ref`s resolved within the schema. Names
that cannot be Python parameters (`user-id`, `from`) make the signature take one
`arguments` dict instead. Descriptions are upstream text, kept short and quoted safely.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping, Sequence
from typing import Any

from router.core.catalog import ToolRecord

MAX_DEPTH = 4
"""Object and array levels written out; deeper ones are `dict` and `list`."""
MAX_KEYS = 30
"""Keys of one object shape written out; the rest are `...`."""
MAX_HOPS = 16
"""`$ref`s followed in one signature (a schema may refer to itself)."""
MAX_DESCRIPTION = 600
MAX_PARAMETER_DESCRIPTION = 160
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def signature(record: ToolRecord) -> str:
    """The tool as an `async def` with a docstring (its description and its parameters')."""
    schema: Mapping[str, Any] = record.input_schema or {}
    properties = _mapping(schema.get("properties"))
    required = [name for name in _strings(schema.get("required")) if name in properties]
    defs = _definitions(schema)
    returns = _returns(record.output_schema)
    if all(name.isidentifier() and not keyword.iskeyword(name) for name in properties):
        ordered = required + [name for name in properties if name not in required]
        parameters = ", ".join(
            _parameter(name, _mapping(properties[name]), name in required, defs) for name in ordered
        )
    else:  # names Python cannot take as parameters: one dict of them
        parameters = f"arguments: {_Writer(defs).object(schema, 0)}"
    lines = [f"async def {record.qualified_name}({parameters}) -> {returns}:"]
    doc = _docstring(record.description, properties)
    lines.extend(f"    {line}" if line else "" for line in doc)
    return "\n".join(lines)


def _parameter(name: str, spec: Mapping[str, Any], required: bool, defs: Mapping[str, Any]) -> str:
    text = f"{name}: {python_type(spec, defs)}"
    if required:
        return text
    default = spec.get("default")
    return f"{text} = {_literal(default)}"


def _returns(output: Mapping[str, Any] | None) -> str:
    if not output:
        return "str"
    return python_type(output, _definitions(output))


def python_type(schema: Any, defs: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """A JSON Schema as a Python type expression."""
    return _Writer(defs or {}).type(schema, depth)


class _Writer:
    """Writes types of one schema; `$ref` hops are counted, so a cycle of them ends."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.hops = 0

    def type(self, schema: Any, depth: int) -> str:
        if not isinstance(schema, Mapping):
            return "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            self.hops += 1
            target = self.defs.get(ref.rsplit("/", 1)[-1])
            return self.type(target, depth) if self.hops <= MAX_HOPS else "dict"
        if "const" in schema:
            return f"Literal[{_literal(schema['const'])}]"
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return f"Literal[{', '.join(_literal(value) for value in enum[:20])}]"
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _union(self.type(option, depth) for option in options)
        every = schema.get("allOf")
        if isinstance(every, list) and len(every) == 1:
            return self.type(every[0], depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self.type({**schema, "type": one}, depth) for one in kind)
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else None
        if kind in _SIMPLE:
            return _SIMPLE[str(kind)]
        if kind == "array":
            items = schema.get("items")
            if depth >= MAX_DEPTH or not isinstance(items, Mapping):
                return "list"
            return f"list[{self.type(items, depth + 1)}]"
        if kind == "object":
            return self.object(schema, depth)
        return "Any"

    def object(self, schema: Mapping[str, Any], depth: int) -> str:
        properties = _mapping(schema.get("properties"))
        if not properties:
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra and depth < MAX_DEPTH:
                return f"dict[str, {self.type(extra, depth + 1)}]"
            return "dict"
        if depth >= MAX_DEPTH:
            return "dict"
        required = set(_strings(schema.get("required")))
        entries = []
        for name in list(properties)[:MAX_KEYS]:
            kind = self.type(properties[name], depth + 1)
            shown = kind if name in required else f"NotRequired[{kind}]"
            entries.append(f"{_literal(name)}: {shown}")
        if len(properties) > MAX_KEYS:
            entries.append("...")
        return "{" + ", ".join(entries) + "}"


def _docstring(description: str, properties: Mapping[str, Any]) -> list[str]:
    lines = [_clip(description, MAX_DESCRIPTION) or "(no description)"]
    described = []
    for name, spec in properties.items():
        text = _mapping(spec).get("description")
        if isinstance(text, str) and text.strip():
            described.append(f"{name}: {_clip(text, MAX_PARAMETER_DESCRIPTION)}")
    if described:
        lines.extend(["", *described])
    lines[0] = '"""' + lines[0]
    if len(lines) == 1:
        lines[0] += '"""'
    else:
        lines.append('"""')
    return lines


def _clip(text: str, most: int) -> str:
    flat = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def _union(parts: Any) -> str:
    unique: list[str] = []
    for part in parts:
        for piece in part.split(" | "):
            if piece not in unique:
                unique.append(piece)
    return " | ".join(unique) if unique else "Any"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    return repr(value) if isinstance(value, list | dict) and len(repr(value)) <= 80 else "..."


def _definitions(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        defs.update(_mapping(schema.get(key)))
    return defs


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strings(value: Any) -> Sequence[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
