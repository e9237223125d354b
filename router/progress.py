"""Progress on stderr for long steps (indexing, evaluation); stdout stays clean."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class StderrProgress:
    """A one-line counter on a terminal; on a pipe, a line at every tenth of the way."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self._label = label
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._started = time.perf_counter()
        self._last_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        elapsed = time.perf_counter() - self._started
        rate = done / elapsed if elapsed > 0 else 0.0
        line = f"{self._label}: {done}/{total} ({100 * done // total}%, {rate:.0f}/s)"
        if self._tty:
            end = "\n" if done >= total else ""
            self._stream.write(f"\r{line}{end}")
            self._stream.flush()
            return
        tenth = 10 * done // total
        if tenth != self._last_tenth or done >= total:
            self._last_tenth = tenth
            self._stream.write(line + "\n")
            self._stream.flush()
