"""The `router.code` section: the limits of each program `execute` runs in code mode
(`router.mode: "code"`), and the sandbox's pool of worker processes.

```json
{"router": {"mode": "code",
            "code": {"max_seconds": 30, "max_total_seconds": 300, "max_memory_mb": 100,
                     "max_tool_calls": 100, "workers": 1, "max_workers": 4}}}
```
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator
from pydantic_core import PydanticCustomError

__all__ = [
    "DEFAULT_CODE_MEMORY_MB",
    "DEFAULT_CODE_SECONDS",
    "DEFAULT_CODE_TOOL_CALLS",
    "DEFAULT_CODE_TOTAL_SECONDS",
    "CodeSettings",
]

DEFAULT_CODE_SECONDS = 30.0
DEFAULT_CODE_TOTAL_SECONDS = 300.0
DEFAULT_CODE_MEMORY_MB = 100
DEFAULT_CODE_TOOL_CALLS = 100


class CodeSettings(BaseModel):
    """The `router.code` section (read only in code mode)."""

    model_config = ConfigDict(extra="forbid")

    max_seconds: PositiveFloat = DEFAULT_CODE_SECONDS
    """Seconds the program itself may run, on the sandbox's clock: time spent waiting for a
    tool's result does not count (`max_total_seconds` bounds that)."""
    max_total_seconds: PositiveFloat = DEFAULT_CODE_TOTAL_SECONDS
    """Seconds the whole run may take, tool calls included. A 2026-07-28 host's time to answer
    a question (a confirmation) is not counted, and is bounded on its own; on the handshake
    revisions the question is asked inside the call, and counts."""
    max_memory_mb: int = Field(default=DEFAULT_CODE_MEMORY_MB, ge=1, le=65536)
    """The program's heap, in MiB (tool results it holds count)."""
    max_tool_calls: int = Field(default=DEFAULT_CODE_TOOL_CALLS, ge=1, le=10_000)
    """Calls of `call_tool` and `search_tools` one run may make; the next one ends it."""
    workers: int = Field(default=1, ge=0, le=64)
    """Sandbox worker processes started with the router and kept warm."""
    max_workers: int = Field(default=4, ge=1, le=64)
    """Programs that run at once; a run past them waits for a worker."""

    @model_validator(mode="after")
    def _warm_within_max(self) -> CodeSettings:
        if self.workers > self.max_workers:
            raise PydanticCustomError(
                "code_workers",
                "workers ({workers}) is more than max_workers ({most}); raise max_workers or "
                "keep fewer warm",
                {"workers": self.workers, "most": self.max_workers},
            )
        return self
