"""Checking a call's arguments against the tool's `inputSchema` before it reaches an upstream."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from router.accounting.formats import normalise_schema
from router.core.errors import ArgumentsInvalid

if TYPE_CHECKING:  # jsonschema loads on the first call (or while the model loads at start)
    import jsonschema.exceptions

logger = logging.getLogger(__name__)


@lru_cache(maxsize=4096)
def _validator(schema_key: str, schema_json: str) -> Any:
    import jsonschema.exceptions
    import jsonschema.validators

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        # An upstream's broken schema must not block its tool: let the upstream judge.
        logger.warning("tool %s has an invalid input schema (%s); not validating", schema_key, exc)
        return None
    return cls(schema)


# The validator of each schema object a call has used: a catalog snapshot's schemas never
# change, so the object itself is the key, and serialising it (the content key of
# `_validator`) happens once per schema instead of on every call. The schema is kept in the
# value so that its id cannot be reused while the entry lives.
_BY_OBJECT: dict[tuple[str, int], tuple[Mapping[str, Any], Any]] = {}
_BY_OBJECT_LIMIT = 4096


def _validator_of(tool: str, schema: Mapping[str, Any]) -> Any:
    entry = _BY_OBJECT.get((tool, id(schema)))
    if entry is not None and entry[0] is schema:
        return entry[1]
    validator = _validator(tool, json.dumps(schema, sort_keys=True))
    if len(_BY_OBJECT) >= _BY_OBJECT_LIMIT:
        _BY_OBJECT.clear()  # a new snapshot replaced the schemas: start over
    _BY_OBJECT[(tool, id(schema))] = (schema, validator)
    return validator


def validate_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Raise `ArgumentsInvalid` naming each field that breaks `schema`."""
    validator = _validator_of(tool, schema)
    if validator is None:
        return
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    if errors:
        problems = [_describe(error) for error in errors]
        raise ArgumentsInvalid(tool, problems, _shown_schema(schema))


MAX_SCHEMA_CHARS = 16_000
"""An input schema longer than this (as compact JSON) is left out of an argument error: a
JSON-RPC error stays small, and such a tool's schema is one `search_tools` away (its name
as the query)."""


def _shown_schema(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema as `search_tools` shows it, for the error's data; None when too long."""
    shown = normalise_schema(schema)
    fits = len(json.dumps(shown, separators=(",", ":"), default=str)) <= MAX_SCHEMA_CHARS
    return shown if fits else None


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    field = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        prefix = f"{field}." if field else ""
        return f"missing required field '{prefix}{missing}'"
    if error.validator == "additionalProperties":
        return f"{field or 'arguments'}: {error.message}"
    return f"field '{field}': {error.message}" if field else error.message
