"""What the config says of the shape hosts see: a server entry's `tools` section (tool
transforms, `router.shaping.transforms` applies them) and the `router.endpoints` section
(virtual endpoints, `router.shaping.endpoints`).

```json
"github": {"url": "...", "tools": {
    "create_issue": {"name": "open_ticket", "description": "Open a ticket in our tracker",
                     "fixed": {"owner": "acme"}, "defaults": {"labels": ["triage"]}},
    "delete_*": {"annotations": {"destructiveHint": true}, "tags": ["danger"]},
    "*_gist": {"hide": true}}}
```

Keys are the upstream's tool names, `*` globs allowed; a rename names one tool, so a glob key
cannot carry `name`.

```json
"endpoints": {
  "support": {"servers": ["tracker", "docs"], "k": 3, "pin": ["tracker/tkt_new"]},
  "ops": {"servers": ["github", "tracker"], "tools": ["github/*", "tracker/tkt_*"],
          "mode": "all", "policy": {"confirm": ["github/merge_*"]}}
}
```

An endpoint is a view over the one index and the one set of upstream connections: it never
embeds a tool again nor opens a second connection. Its settings fall back to the `router`
section's; its `policy` adds to `router.policy` (the stricter of the two rules), and
profiles still apply (a tool must pass both).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from router.config.fields import Pattern

__all__ = [
    "ENDPOINT_NAME",
    "AnnotationOverrides",
    "Endpoint",
    "EndpointName",
    "EndpointPolicy",
    "TaskMode",
    "ToolTransform",
    "check_transforms",
    "is_glob",
]

ToolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_./-]{1,128}$")]
"""MCP's tool-name characters (letters, digits, `_`, `-`, `.`, `/`), 1 to 128 of them."""

_GLOB = re.compile(r"[*?\[]")

TaskMode = Literal["never", "auto", "always", "required"]
"""Whether a host that declared the tasks extension gets a call as a task
(`router.config.servers.TaskSettings`): `never` (it answers in its request), `auto` (once it
runs past `router.tasks.after_ms`, or asks the host something), `always` (at once),
`required` (at once, and a call from a host that did not declare the extension is refused
with `-32021` instead of answering in its request)."""


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
    tasks: TaskMode | None = None
    """Whether its calls run as tasks for a host that declared the tasks extension
    (`TaskMode`): over the server entry's `tasks`; a tool's own key over a glob."""

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


ENDPOINT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
EndpointName = Annotated[str, StringConstraints(pattern=ENDPOINT_NAME)]
"""A path segment: letters, digits, `_` and `-`, at most 64, starting with a letter or digit."""


class EndpointPolicy(BaseModel):
    """Rules added to `router.policy` on this endpoint (`router.config.settings.Policy`'s
    fields): a tool either policy denies is denied, one either confirms asks first, and a
    non-empty `allow` here must name the tool as well."""

    model_config = ConfigDict(extra="forbid")

    allow: list[Pattern] = Field(default_factory=list)
    deny: list[Pattern] = Field(default_factory=list)
    confirm: list[Pattern] = Field(default_factory=list)


class Endpoint(BaseModel):
    """One named endpoint; an unset field is the `router` section's."""

    model_config = ConfigDict(extra="forbid")

    servers: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    """The servers whose tools, resources and prompts it serves; empty: every server."""
    tools: list[Pattern] = Field(default_factory=list)
    """`server/tool` (or qualified-name) globs its tools must match; empty: every tool of
    its servers."""
    mode: Literal["search", "dynamic", "all", "code"] | None = None
    k: int | None = Field(default=None, ge=1, le=100)
    pin: list[Pattern] | None = None
    """Its own pinned tools, instead of `router.pin`."""
    policy: EndpointPolicy = Field(default_factory=EndpointPolicy)
