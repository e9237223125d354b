"""Exponential backoff between reconnect attempts."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Delays `initial * factor**n`, capped at `maximum`, with +-`jitter` so that upstreams
    that died together do not restart together."""

    initial: float = 0.5
    factor: float = 2.0
    maximum: float = 30.0
    jitter: float = 0.1
    stable_after: float = 30.0
    """A session healthy for this long resets the delay: a crash loop keeps backing off."""

    def delay(self, failures: int) -> float:
        """The wait before the attempt that follows `failures` consecutive failures (>= 1)."""
        base = min(self.maximum, self.initial * self.factor ** max(0, failures - 1))
        spread = base * self.jitter
        return max(0.0, base + random.uniform(-spread, spread))
