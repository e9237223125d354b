"""The field types the configuration models share: scalars read as text, `${VAR}` expansion
from the environment, and non-empty glob patterns."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, ValidationInfo
from pydantic_core import PydanticCustomError

__all__ = ["ExpandedSecret", "ExpandedText", "Pattern", "Text"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _scalar_to_str(value: Any) -> Any:
    """`"PORT": 3000` in env or args is common in hand-written files: read it as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _expand_vars(value: str, info: ValidationInfo) -> str:
    """Replace `${VAR}` / `${VAR:-default}` from the environment given as context."""
    context = info.context if isinstance(info.context, Mapping) else {}
    environ: Mapping[str, str] = context.get("environ", os.environ)

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise PydanticCustomError(
            "env_var_missing",
            "environment variable {var} is not set",
            {"var": name},
        )

    return _VAR.sub(substitute, value)


Text = Annotated[str, BeforeValidator(_scalar_to_str)]
ExpandedText = Annotated[str, BeforeValidator(_scalar_to_str), AfterValidator(_expand_vars)]
Pattern = Annotated[str, Field(min_length=1)]


def _expand_secret(value: Any, info: ValidationInfo) -> Any:
    return _expand_vars(value, info) if isinstance(value, str) else value


ExpandedSecret = Annotated[SecretStr, BeforeValidator(_expand_secret)]
"""A credential (`${VAR}` expanded): a `repr`, a log line or a validation error never shows it."""
