"""Progress bars for long steps (indexing, evaluation, the benchmark suite), drawn by rich
on stderr: stdout carries only results (and, in stdio mode, JSON-RPC).

rich loads when a bar is made, so importing the CLI or serving never loads it. On a
terminal a bar redraws in place; anywhere else (a pipe, a log file) rich draws nothing
while it runs and prints its final state once when it stops: a log gets one line, not a
stream of carriage-return frames.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

_bars = True


def without_bars() -> None:
    """Draw no bar from now on (`--log-format json`: stderr carries JSON lines only)."""
    global _bars
    _bars = False


def stderr_progress(*, disable: bool = False) -> Progress:
    """A rich `Progress` on stderr: label, bar, percentage, count, elapsed time, ETA."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    # A terminal is what isatty says: FORCE_COLOR in a CI job must not turn a log into
    # redraws (rich would take it for a terminal).
    console = Console(stderr=True, force_terminal=sys.stderr.isatty())
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        redirect_stdout=False,  # rich would send print() to its console, i.e. stderr
        disable=disable,
    )


@contextmanager
def progress_callback(label: str) -> Iterator[Callable[[int, int], None]]:
    """A `(done, total)` callback drawing one bar named `label`. The bar appears at the
    first report (a step with nothing to do shows none) and ends when `done` reaches
    `total`, or when the block exits (an error or Ctrl-C leaves the terminal sane)."""
    if not _bars:
        yield lambda done, total: None
        return
    progress = stderr_progress()
    task: TaskID | None = None

    def report(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            progress.start()
            task = progress.add_task(label, total=total)
        progress.update(task, completed=done, total=total)
        if done >= total:
            stop()

    def stop() -> None:
        if progress.live.is_started:  # rich's stop prints a blank line off a terminal
            progress.stop()

    try:
        yield report
    finally:
        stop()
