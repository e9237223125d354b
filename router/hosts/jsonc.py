"""JSON and JSON with comments, read with the position of every value, and edited in place.

Host config files are edited by people and by the hosts themselves; rewriting one through
`json.dumps` would reformat the whole file and, for VS Code's JSONC, drop its comments.
`replace` swaps the text of one value (or adds one member) and leaves every other byte as
it was.

`load(text, syntax="json")` is as strict as `json.loads`; `syntax="jsonc"` also accepts
`//` and `/* */` comments and trailing commas, as VS Code reads its settings and `mcp.json`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["JsonSyntaxError", "Node", "load", "parse", "replace"]

Syntax = Literal["json", "jsonc"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JsonSyntaxError(ValueError):
    """The text is not valid JSON (or JSONC); `line` and `column` count from 1."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line} column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


@dataclass
class Node:
    """A value and where it is: `text[start:end]` is its source."""

    start: int
    end: int
    value: Any
    members: dict[str, Node] = field(default_factory=dict)
    """An object's members by key (the last one wins, as in `json.loads`)."""
    closing: int = -1
    """An object's `}` offset."""
    last_end: int = -1
    """The end of an object's last member value, or -1 for an empty object."""


def load(text: str, syntax: Syntax = "json") -> Any:
    """The decoded document (`JsonSyntaxError` when it is not valid for `syntax`)."""
    return parse(text, syntax).value


def parse(text: str, syntax: Syntax = "json") -> Node:
    """The document's tree of values with their offsets."""
    if syntax == "json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise JsonSyntaxError(exc.msg, exc.lineno, exc.colno) from None
    return _Parser(text).document()


def replace(text: str, path: Sequence[str], value: Any, syntax: Syntax = "json") -> str:
    """`text` with the value at `path` (object keys from the top) set to `value`.

    Only that value's text changes; a missing member is added at the end of its object
    (with any missing objects above it). The new value is indented to fit its place.
    """
    root = parse(text, syntax)
    if not isinstance(root.value, dict):
        raise JsonSyntaxError("the top level is not an object", 1, 1)
    unit = _indent_unit(text)
    node = root
    for depth, key in enumerate(path):
        child = node.members.get(key)
        rest = path[depth + 1 :]
        if child is None:
            return _add_member(text, node, key, _nest(rest, value), unit)
        if rest and isinstance(child.value, dict):
            node = child
            continue
        # The value itself, or a non-object in the way of the path: replace it whole.
        new = _dumps(_nest(rest, value), unit, _line_indent(text, child.start))
        return text[: child.start] + new + text[child.end :]
    raise ValueError("an empty path names the whole document")


def _nest(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _add_member(text: str, obj: Node, key: str, value: Any, unit: str) -> str:
    outer = _line_indent(text, obj.start)
    if obj.last_end < 0:  # an empty object: open it up, keeping any comment inside
        inner = outer + unit
        body = f"\n{inner}{json.dumps(key)}: {_dumps(value, unit, inner)}"
        inside = text[obj.start + 1 : obj.closing]
        rest = inside if inside.strip() else f"\n{outer}"
        return text[: obj.start + 1] + body + rest + text[obj.closing :]
    first = min(obj.members.values(), key=lambda node: node.start)
    inner = _line_indent(text, first.start)
    if inner == _line_indent(text, obj.start) and "\n" not in text[obj.start : first.start]:
        inner = outer + unit  # `{"a": 1}` on one line: put the new member on its own line
    member = f"{json.dumps(key)}: {_dumps(value, unit, inner)}"
    after = _skip_space(text, obj.last_end)
    if text.startswith(",", after):  # a trailing comma (JSONC) is already there
        return text[: after + 1] + f"\n{inner}{member}" + text[after + 1 :]
    return text[: obj.last_end] + f",\n{inner}{member}" + text[obj.last_end :]


def _dumps(value: Any, unit: str, indent: str) -> str:
    dumped = json.dumps(value, indent=unit, ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _indent_unit(text: str) -> str:
    """The file's indentation step: how much deeper the first line after an opening `{` or
    `[` is (two spaces when no line is indented so; hand-aligned lines say nothing)."""
    previous = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        before, now = _leading(previous), _leading(line)
        if previous.rstrip().endswith(("{", "[")) and len(now) > len(before):
            return now[len(before) :] if now.startswith(before) else now
        previous = line
    return "  "


def _line_indent(text: str, offset: int) -> str:
    """The indentation of the line that `offset` is on."""
    return _leading(text[text.rfind("\n", 0, offset) + 1 : offset])


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _skip_space(text: str, offset: int) -> int:
    while offset < len(text) and text[offset] in " \t\r\n":
        offset += 1
    return offset


class _Parser:
    """A recursive-descent reader of JSONC that keeps offsets (strings decode via `json`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def document(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            self.fail("the file is empty")
        node = self.value()
        self.skip()
        if self.pos < len(self.text):
            self.fail("unexpected text after the document")
        return node

    def fail(self, message: str, at: int | None = None) -> None:
        offset = self.pos if at is None else at
        line = self.text.count("\n", 0, offset) + 1
        column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        raise JsonSyntaxError(message, line, column)

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    self.fail("unterminated comment")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        char = self.text[self.pos : self.pos + 1]
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            start = self.pos
            return Node(start, self.string_end(), self.string(start))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                start, self.pos = self.pos, self.pos + len(word)
                return Node(start, self.pos, literal)
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            self.fail("expected a value")
            raise AssertionError  # unreachable: fail raises
        self.pos = match.end()
        number = match.group()
        parsed: int | float = float(number) if any(c in number for c in ".eE") else int(number)
        return Node(match.start(), match.end(), parsed)

    def string_end(self) -> int:
        index = self.pos + 1
        text = self.text
        while index < len(text):
            char = text[index]
            if char == "\\":
                index += 2
            elif char == '"':
                self.pos = index + 1
                return self.pos
            elif char == "\n":
                break
            else:
                index += 1
        self.fail("unterminated string")
        raise AssertionError

    def string(self, start: int) -> str:
        try:
            decoded: str = json.loads(self.text[start : self.pos])
        except json.JSONDecodeError as exc:
            self.fail(f"invalid string ({exc.msg})", start)
            raise AssertionError from None
        return decoded

    def object(self) -> Node:
        node = Node(self.pos, -1, {})
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                break
            if not self.text.startswith('"', self.pos):
                self.fail("expected a key in double quotes")
            key_start = self.pos
            self.string_end()
            key = self.string(key_start)
            self.skip()
            if not self.text.startswith(":", self.pos):
                self.fail("expected ':' after the key")
            self.pos += 1
            self.skip()
            child = self.value()
            node.members[key] = child
            node.value[key] = child.value
            node.last_end = child.end
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            self.skip()
            if not self.text.startswith("}", self.pos):
                self.fail("expected ',' or '}'")
            break
        node.closing = self.pos
        self.pos += 1
        node.end = self.pos
        return node

    def array(self) -> Node:
        node = Node(self.pos, -1, [])
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                break
            node.value.append(self.value().value)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if not self.text.startswith("]", self.pos):
                self.fail("expected ',' or ']'")
            break
        self.pos += 1
        node.end = self.pos
        return node
