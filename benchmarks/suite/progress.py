"""One progress bar for the whole run, on stderr (stdout carries only the table).

On a terminal it redraws one line; on a pipe or a log file it writes a line every 5%.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 30


class ProgressBar:
    """`[#####-----]  45%  1234/2740  msc_bench +5000: queries  ETA 3m10s`."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stage = ""
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._tty = self._stream.isatty()
        self._started = time.perf_counter()
        self._last_step = -1

    def set_stage(self, stage: str) -> None:
        self.stage = stage
        self._draw(force=True)

    def advance(self, units: int = 1) -> None:
        self.done = min(self.done + units, self.total)
        self._draw()

    def close(self) -> None:
        self.done = self.total
        self._draw(force=True)
        if self._enabled and self._tty:
            self._stream.write("\n")
            self._stream.flush()

    def _line(self) -> str:
        fraction = self.done / self.total
        filled = int(fraction * _WIDTH)
        elapsed = time.perf_counter() - self._started
        eta = elapsed * (1 - fraction) / fraction if fraction > 0 else 0.0
        return (
            f"[{'#' * filled}{'-' * (_WIDTH - filled)}] {100 * fraction:3.0f}%  "
            f"{self.done}/{self.total}  {self.stage}  "
            f"{_clock(elapsed)} elapsed, ETA {_clock(eta)}"
        )

    def _draw(self, force: bool = False) -> None:
        if not self._enabled:
            return
        if self._tty:
            self._stream.write("\r\033[K" + self._line())
            self._stream.flush()
            return
        step = 20 * self.done // self.total
        if force or step != self._last_step:
            self._last_step = step
            self._stream.write(self._line() + "\n")
            self._stream.flush()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"
