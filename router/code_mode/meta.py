"""Code mode's listing: `search_tools`, which answers with Python signatures, and
`execute(code)`. Records like the other meta-tools' (`router.core.meta_tools`), so that token
accounting prices them the same way."""

from __future__ import annotations

from router.config.code import CodeSettings
from router.core.catalog import ToolRecord
from router.core.meta_tools import EXECUTE, SEARCH_TOOLS, meta_record, search_schema

MODULES = (
    "asyncio, base64, bisect, collections, copy, csv, dataclasses, datetime, decimal, "
    "functools, hashlib, itertools, json, math, random, re, time, tomllib, typing"
)
"""What a program may import (the sandbox's standard library)."""

_SEARCH = (
    "Find the tools for a task among every connected server's tools. Describe one task in "
    'plain words: the goal, what it acts on, and the product or server if known ("create an '
    'issue on GitHub"), not a guessed tool name. Matches come back as Python signatures '
    "(parameters, return shape, docstring), to call from a program you run with execute. If "
    "the answer says no tool matches well, search again in other words."
)


def _execute_description(settings: CodeSettings) -> str:
    return (
        "Run a Python program over the tools; you get back only what it prints and the value "
        "of its last expression, so intermediate results never fill your context. In it, "
        "`await call_tool(name, arguments)` calls a tool (arguments: a dict, as its "
        "signature says) and returns its structured content (a dict) where it has one, else "
        "its text; it raises RuntimeError when the tool answers an error, PermissionError "
        "when the router's policy or the user refuses the call, ValueError for an unknown "
        "tool or wrong arguments. `await search_tools(query, k)` returns more tools as "
        "[{name, description, signature}]. Use asyncio.gather for calls that can run "
        "together. The language is a Python subset (functions, classes without base classes, "
        f"comprehensions, f-strings, try/except; imports: {MODULES}) with no file, network "
        f"or environment access. Limits per run: {settings.max_seconds:g} s of running time, "
        f"{settings.max_memory_mb} MiB of memory, {settings.max_tool_calls} tool calls."
    )


def code_search_record(default_k: int) -> ToolRecord:
    return meta_record(SEARCH_TOOLS, _SEARCH, search_schema(default_k))


def execute_record(settings: CodeSettings) -> ToolRecord:
    return meta_record(
        EXECUTE,
        _execute_description(settings),
        {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The program; top-level await works.",
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    )


def code_meta_records(default_k: int, settings: CodeSettings) -> tuple[ToolRecord, ToolRecord]:
    """What code mode lists after the pins, in this order."""
    return (code_search_record(default_k), execute_record(settings))
