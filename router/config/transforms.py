"""A server entry's `tools` section: how the router reshapes the upstream's tools without
forking the server (`router.shaping.transforms` applies it).

```json
"github": {"url": "...", "tools": {
    "create_issue": {"name": "open_ticket", "description": "Open a ticket in our tracker",
                     "fixed": {"owner": "acme"}, "defaults": {"labels": ["triage"]}},
    "delete_*": {"annotations": {"destructiveHint": true}, "tags": ["danger"]},
    "*_gist": {"hide": true}}}
```

Keys are the upstream's tool names, `*` globs allowed; a rename names one tool, so a glob key
cannot carry `name`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["AnnotationOverrides", "ToolTransform", "check_transforms", "is_glob"]

ToolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_./-]{1,128}$")]
"""MCP's tool-name characters (letters, digits, `_`, `-`, `.`, `/`), 1 to 128 of them."""

_GLOB = re.compile(r"[*?\[]")


def is_glob(key: str) -> bool:
    return _GLOB.search(key) is not None


class AnnotationOverrides(BaseModel):
    """The tool annotations a transform may set (MCP's `ToolAnnotations`), by their names."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = None
    readOnlyHint: bool | None = None  # MCP spells them so
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None


class ToolTransform(BaseModel):
    """What to change of one upstream tool (or of every tool a glob key matches)."""

    model_config = ConfigDict(extra="forbid")

    name: ToolName | None = None
    """The name the router lists and calls it by; the upstream still gets its own."""
    description: str | None = None
    """Replaces the upstream's description (what the model reads, and search ranks on)."""
    description_append: str | None = None
    """Added after the upstream's description, as a paragraph of its own."""
    hide: bool = False
    """Neither listed, searched nor callable."""
    defaults: dict[str, Any] = Field(default_factory=dict)
    """Argument values a call gets when it leaves them out; shown in the schema as `default`."""
    fixed: dict[str, Any] = Field(default_factory=dict)
    """Argument values set on every call: taken out of the schema, so the model neither sees
    nor changes them."""
    tags: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    """Words the tool is also found by, listed in its `_meta` (`mcp-router/tags`)."""
    annotations: AnnotationOverrides = Field(default_factory=AnnotationOverrides)
    """Set over the upstream's annotations: `destructiveHint: true` makes
    `confirm_destructive` and policy treat the tool as destructive."""

    @model_validator(mode="after")
    def _consistent(self) -> ToolTransform:
        if self.description is not None and self.description_append is not None:
            raise PydanticCustomError(
                "transform_description",
                "give `description` (replace) or `description_append` (add), not both",
            )
        both = sorted(set(self.defaults) & set(self.fixed))
        if both:
            raise PydanticCustomError(
                "transform_arguments",
                "{names} is in both `defaults` and `fixed`; a fixed value is never left out, "
                "so keep it in `fixed` only",
                {"names": ", ".join(both)},
            )
        return self

    def overrides(self) -> dict[str, Any]:
        """The annotations this transform sets, by MCP's names."""
        return self.annotations.model_dump(exclude_none=True)


def check_transforms(tools: dict[str, ToolTransform]) -> dict[str, ToolTransform]:
    """A glob key cannot rename: many tools would share one name."""
    for key, transform in tools.items():
        if is_glob(key) and transform.name is not None:
            raise PydanticCustomError(
                "transform_glob_rename",
                "`tools.{key}` is a glob, and a rename names one tool: move `name` under the "
                "tool's own name",
                {"key": key},
            )
    return tools
