"""An upstream's health across its connections: its state, how many attempts it took, why
the last one failed and when the next begins. The owner task moves it along; everyone else
reads it through `Upstream.status`."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from router.upstream.state import UpstreamState


class Health:
    """The health record of one upstream; `on_change` runs after every change of state."""

    def __init__(self, on_change: Callable[[], None], *, idle: bool = False) -> None:
        """`idle`: a lazy upstream whose cached listing is known starts out idle."""
        self._on_change = on_change
        self.state = UpstreamState.IDLE if idle else UpstreamState.CONNECTING
        self.attempts = 0
        self.settled = idle
        """Whether the first attempt has ended, healthy or not."""
        self.connect_seconds: float | None = None
        self.last_error: str | None = None
        self.last_stderr: str | None = None
        self.retry_at: float | None = None
        self.healthy_since: float | None = None
        self.sign_in_needed = False

    def _enter(self, state: UpstreamState) -> None:
        self.state = state
        self._on_change()

    def connecting(self) -> None:
        """A new attempt begins."""
        self.attempts += 1
        self._enter(UpstreamState.CONNECTING)
        self.healthy_since = None

    def healthy(self, took: float) -> None:
        """The attempt connected and listed in `took` seconds."""
        self.connect_seconds = took
        self.healthy_since = anyio.current_time()
        self.settled = True
        self.last_error = None
        self.last_stderr = None
        self.sign_in_needed = False
        self._enter(UpstreamState.HEALTHY)

    def failed(
        self, error: str, stderr: str | None, retry_in: float, sign_in_needed: bool = False
    ) -> None:
        """The connection ended or never came up; the next attempt is `retry_in` s away."""
        self.sign_in_needed = sign_in_needed
        self.last_error = error
        self.last_stderr = stderr
        self.retry_at = anyio.current_time() + retry_in
        self.settled = True
        self._enter(UpstreamState.UNHEALTHY)

    def stopped(self) -> None:
        self._enter(UpstreamState.STOPPED)

    def park(self) -> None:
        """A lazy upstream waits for a call: idle, or still down after a failed start (then
        no retry is scheduled: the next call starts it)."""
        self.settled = True
        if self.state is UpstreamState.UNHEALTHY:
            self.retry_at = None
            self._on_change()
        else:
            self._enter(UpstreamState.IDLE)

    def was_stable(self, stable_after: float) -> bool:
        """Whether the connection that just ended stayed healthy `stable_after` s or more."""
        since = self.healthy_since
        return since is not None and anyio.current_time() - since >= stable_after

    def retry_in(self) -> float | None:
        """Seconds to the next attempt while unhealthy, else None."""
        if self.retry_at is None or self.state is not UpstreamState.UNHEALTHY:
            return None
        return max(0.0, self.retry_at - anyio.current_time())

    def why_down(self) -> str:
        """What a call made now is told."""
        if self.state is UpstreamState.UNHEALTHY:
            retry = self.retry_in()
            when = f"; retrying in {retry:.1f}s" if retry is not None else ""
            if self.retry_at is None:
                when = "; the next call starts it again"
            return f"down ({self.last_error}){when}"
        if self.state is UpstreamState.CONNECTING:
            return f"connecting (attempt {self.attempts})"
        return self.state.value
