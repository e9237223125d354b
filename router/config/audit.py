"""The `router.audit` section: where the audit trail goes and what it may hold."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class AuditSettings(BaseModel):
    """One hash-chained JSON line per decision (`router.audit`): every tool call (code
    mode's included), approval and refusal, with its principal, tool, outcome, latency and
    result size. Arguments are recorded as a digest; only the argument names in `fields`
    are recorded in clear (secrets still redacted)."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    """The trail's file; `~` is expanded. Give each replica its own."""
    required: bool = True
    """Fail closed: a call whose decision cannot be written is refused. False: the failure is
    logged and counted, and the call goes on."""
    max_mib: Annotated[float, Field(gt=0)] = 64.0
    """The size at which the file rotates (the chain goes on in the next file)."""
    keep: Annotated[int, Field(ge=0)] = 10
    """Rotated files kept; older ones are deleted."""
    otel: bool = False
    """Emit each line as an OpenTelemetry log record too (`OTEL_LOGS_EXPORTER`: `otlp`, the
    default, or `console`); needs the `otel` extra."""
    fields: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Argument names recorded in clear (for example `path`, `repo`); the rest only in the
    arguments' digest."""
