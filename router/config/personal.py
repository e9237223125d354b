"""Per-user upstream credentials: where their encryption key comes from, and how many
per-principal connections may be open.

```json
"router": {
  "secrets_key": {"env": "MCP_ROUTER_SECRETS_KEY"},
  "personal": {"max_connections": 256, "idle_seconds": 600}}
```

The key is never in the config itself: `{"env": NAME}` names an environment variable and
`{"file": PATH}` a file (relative to the config's folder), each holding at least 32
characters of key material. Unset, the variable `MCP_ROUTER_SECRETS_KEY` is read, and without
it a key file is made in the cache folder (0600) on one machine; replicas of a shared store
must name the same key, so there the key is required.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["DEFAULT_KEY_ENV", "PersonalSettings", "SecretsKey"]

DEFAULT_KEY_ENV = "MCP_ROUTER_SECRETS_KEY"


class SecretsKey(BaseModel):
    """`router.secrets_key`: an environment variable or a file that holds the key."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(default=None, min_length=1)
    file: Path | None = None

    @model_validator(mode="after")
    def _one_source(self) -> SecretsKey:
        if (self.env is None) == (self.file is None):
            raise PydanticCustomError(
                "secrets_key",
                'name exactly one of "env" (a variable) or "file" (a path); the key itself '
                "never goes in the config",
                {},
            )
        return self


class PersonalSettings(BaseModel):
    """`router.personal`: the bounds on per-principal upstream connections."""

    model_config = ConfigDict(extra="forbid")

    max_connections: int = Field(default=256, ge=1, le=100_000)
    """Per-principal connections open at once, all per-user upstreams together; past it the
    least recently used one is closed."""
    idle_seconds: float = Field(default=600.0, gt=0)
    """A per-principal connection without a request for this long is closed."""
