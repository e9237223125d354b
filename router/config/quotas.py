"""The `router.quotas` section: how much each principal may use, by profile name."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Limit = Annotated[int, Field(ge=1)] | None
Size = Annotated[float, Field(gt=0)] | None

DEFAULT_REFUSED_PER_MINUTE = 60
"""Refused requests a minute per principal when the config sets none (`refused_per_minute`):
a client that mistypes a name gets suggestions and retries, a few refusals a minute, while
one that floods refusals (each is cheap to send and costs a line of the audit trail) is
held to one a second."""


class UpstreamQuota(BaseModel):
    """A quota on one upstream's tools, per principal."""

    model_config = ConfigDict(extra="forbid")

    calls_per_minute: Limit = None
    concurrent_calls: Limit = None
    result_mib_per_hour: Size = None


class Quota(BaseModel):
    """One `router.quotas` entry (a profile's, or `default`): per principal, unset is
    unlimited. Each principal has its own allowance: one who spends it slows no one else."""

    model_config = ConfigDict(extra="forbid")

    calls_per_minute: Limit = None
    """Tool calls a minute (a token bucket: a burst of this many, refilled evenly)."""
    concurrent_calls: Limit = None
    """Tool calls in flight at once."""
    code_runs_per_minute: Limit = None
    """Code mode's `execute` runs a minute (each call a program makes counts as a call too)."""
    refused_per_minute: Limit = DEFAULT_REFUSED_PER_MINUTE
    """Requests a minute refused before `meter` (an unknown tool, bad arguments, a denied or
    held tool): a token bucket that only refusals spend. Past it, every call is refused
    (over quota) until it refills. Unlike the other limits it has a default; `null` lifts it."""
    result_mib_per_hour: Size = None
    """MiB of tool results an hour (results as the upstreams sent them). A call is refused
    while the principal's allowance is spent; one big result may take it below zero, and
    the calls after it wait for the refill."""
    upstreams: dict[str, UpstreamQuota] = Field(default_factory=dict)
    """The same limits on one upstream's tools, by server name."""
