"""Giving freed heap memory back to the operating system.

glibc keeps memory freed by large transient work (reading a model, building an index, the
native libraries' worker threads) in its arenas, so the process's RSS stays at its peak. A
long-lived router that a host starts per session should not: after such work, this hands
the free pages back (the RSS a router reaches with it is `memory.runs` of
`benchmarks/results/perf.json`).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
from collections.abc import Iterator
from functools import cache


@cache
def _malloc_trim() -> ctypes._NamedFuncPointer | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc only; musl and macOS have no such call
    except (OSError, AttributeError):
        return None


_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_ARENAS = 2
_MMAP_THRESHOLD = 1024 * 1024
_TRIM_THRESHOLD = 64 * 1024 * 1024


def tune_malloc_for_serving() -> None:
    """Keep a long-lived server's heap compact, unless the `MALLOC_*` environment variables
    say otherwise; call it before any thread starts.

    glibc gives threads arenas of their own (up to eight per core) and raises its mmap
    threshold as large blocks are freed, after which the model's per-text buffers are carved
    out of the arenas and leave them fragmented. So: two arenas, blocks of 1 MB or more
    always mapped on their own (returned when freed), and no eager trimming of a heap's top
    (`release_free_memory` trims after big work instead; trimming on every free slowed
    embedding down). With a 20k-tool catalog embedded cold, these settings lowered both the
    steady and the peak RSS at the same embedding speed; the figures they give now are the
    `router-onnx` / `catalog-20000` rows of `memory.runs` in `benchmarks/results/perf.json`.
    """
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        mallopt = ctypes.CDLL(None).mallopt
        if not os.environ.get("MALLOC_ARENA_MAX"):
            mallopt(_M_ARENA_MAX, _ARENAS)
        if not os.environ.get("MALLOC_MMAP_THRESHOLD_"):
            mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
        if not os.environ.get("MALLOC_TRIM_THRESHOLD_"):
            mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def release_free_memory() -> None:
    """Return free heap pages to the OS where the C library can (a no-op elsewhere)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def settle_long_lived() -> None:
    """Take what is alive now (a new catalog snapshot above all) out of the garbage
    collector's full passes.

    A large catalog is millions of objects, and every full collection walked them all while
    holding the GIL: a stall of the event loop, triggered by whatever allocated next (a
    `/v1/tools` page, the next re-index). `python -m benchmarks.bounded_work` measures the
    loop's worst stall at 20,000 tools (`benchmarks/results/bounded-work.json`). Frozen
    objects (`gc.freeze`) are still freed by reference counting, so a snapshot swapped out
    goes as before; only garbage in reference cycles that is frozen would stay, which is why
    the young generations are collected first. Call it after a swap, on the event loop: both
    steps are cheap (`collect(1)` walks only the young generations, and `freeze` moves the
    generations without walking them).
    """
    gc.collect(1)
    gc.freeze()


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """No cyclic garbage collection while a command imports what it runs with, and what it
    made then frozen (`gc.freeze`) when it is done.

    Importing the SDK, the config models and the server makes about 150,000 objects that
    live as long as the process; the collector, counting allocations, walked them again and
    again while they were made (full passes among them), CPU that `initialize` waited for
    (the `serve_imports` stage of `benchmarks/results/startup.json`). Frozen, later full
    passes skip them too. What import-time garbage sits in reference cycles (about 1,500
    objects) is frozen with them rather than walked for: a bounded, one-time cost.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
