"""The sandbox: pydantic-monty's pool of worker processes, and one program's run in it.

Each run checks a worker out of the pool (kept warm: `router.code.workers`), feeds it the
program, and hands the program two host functions, `call_tool(name, arguments)` and
`search_tools(query, k)`, whose work the `Host` does; nothing else of the router's process
is reachable from inside. The interpreter is Monty, a Rust implementation of a Python
subset, in a subprocess: no filesystem, network, environment or subprocess access (`open`
raises `PermissionError`, `os.environ` and `os.system` do not exist, `socket` and
`subprocess` cannot be imported), and a crash costs the worker, which the pool replaces,
never the router.

Each principal (with identities) may hold `worker_share` of the `max_workers` workers at
once, a run counting from its checkout's wait to its end (a run paused for the host's answer
holds its worker): one principal's programs queue on their own share and are refused past
it, never taking the workers another principal's programs need.

Limits per run (`router.code`, `CodeSettings`): the program's own running time on the
sandbox's clock (`max_seconds`; sleeps count too), the whole run's (`max_total_seconds`,
tool calls included), its heap (`max_memory_mb`) and its calls (`max_tool_calls`). A run
past one ends with an `Outcome` whose `stopped` names the setting. Printed output is kept up
to `PRINTED_BYTES`. Cancelling a run cancels the tool calls it has in flight: Monty awaits a
host coroutine in a task of its own, outside the caller's cancel scope, so each call runs
in a scope the run cancels itself.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

from router.code_mode.outcome import Outcome
from router.config.code import CodeSettings
from router.core.errors import ConfigError

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'mcp-router[code]'"
PRINTED_BYTES = 1_000_000
"""Printed output kept per run; the rest is dropped and the result says so."""
MAX_CODE_CHARS = 100_000
CHECKOUT_SECONDS = 30.0
"""How long a run waits for a free worker when `max_workers` programs already run."""
_MIB = 1024 * 1024
_EXIT_GRACE = 0.1
"""Seconds given to the pool's native threads after it closes: one that still touches Python
while the interpreter finalises aborts the process (pydantic-monty 1.4)."""


class CallRefused(Exception):
    """What a host function raises for a call that failed or was refused; the program sees
    it as the built-in `kind` (a class of the host's own would reach it as `Exception`)."""

    def __init__(self, message: str, kind: type[Exception] = RuntimeError) -> None:
        super().__init__(message)
        self.kind = kind


class Host(Protocol):
    """What a program's calls do: the router's own path for a direct call."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...

    async def search_tools(self, query: str, k: int | None) -> list[dict[str, Any]]: ...


@contextmanager
def untimed(most: float) -> Iterator[None]:
    """Up to `most` seconds inside do not count towards the current run's
    `max_total_seconds` (waiting for a person's answer); outside a run, nothing."""
    run = _current.get()
    started = anyio.current_time()
    if run is not None:
        run.clock.deadline += most
    try:
        yield
    finally:
        if run is not None:
            run.clock.deadline -= max(0.0, most - (anyio.current_time() - started))


def require_sandbox() -> None:
    """Fail at start, naming what to install, when pydantic-monty is missing."""
    if importlib.util.find_spec("pydantic_monty") is None:
        raise ConfigError(
            'router.mode is "code", which runs programs in the pydantic-monty sandbox, and '
            f"it is not installed. Fix: {INSTALL_HINT}, or choose another router.mode."
        )


class Sandbox:
    """The worker pool, for the router's life (`run_pool`), and the runs in it (`run`)."""

    def __init__(self, settings: CodeSettings | None = None) -> None:
        self.settings = settings or CodeSettings()
        self._pool: AsyncMonty | None = None
        self._ready = anyio.Event()
        self._holding: dict[str, int] = {}
        """Runs per principal that hold (or wait for) a worker; bounded by the live runs."""

    @property
    def worker_share(self) -> int:
        """Workers one principal may hold at once: half of `max_workers` (at least one), so
        that while one principal's programs (paused ones among them: each holds its worker
        for up to the pause) fill their share, the other half serves everyone else; with 4
        workers, the default, 2."""
        return max(1, self.settings.max_workers // 2)

    async def run_pool(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Start the workers and keep them warm until cancelled."""
        require_sandbox()
        from pydantic_monty import AsyncMonty

        settings = self.settings
        pool = AsyncMonty(
            min_processes=settings.workers,
            max_processes=settings.max_workers,
            checkout_timeout=CHECKOUT_SECONDS,
            # a backstop (running time and sleeps each up to max_seconds): the limits stop first
            request_timeout=2 * settings.max_seconds + 10.0,
        )
        try:
            async with pool:
                self._pool = pool
                self._ready.set()
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._pool = None
            with anyio.CancelScope(shield=True):
                await anyio.sleep(_EXIT_GRACE)

    async def run(self, code: str, host: Host, principal: str = "") -> Outcome:
        """Run `code` to its end or its first limit, for `principal` (`Principal.key`, ""
        without identities: no share applies); never raises for the program's own
        failures (they are the outcome), only when cancelled."""
        if len(code) > MAX_CODE_CHARS:
            return Outcome(
                error=f"ValueError: the program is longer than {MAX_CODE_CHARS:,} characters"
            )
        share = self.worker_share
        if principal and self._holding.get(principal, 0) >= share:
            return Outcome(
                stopped=f"your programs already hold {share} of the sandbox's "
                f"{self.settings.max_workers} workers, your share (router.code.max_workers); "
                "let one finish, or answer the one waiting for you, first"
            )
        self._holding[principal] = self._holding.get(principal, 0) + 1
        try:
            with anyio.move_on_after(CHECKOUT_SECONDS):
                await self._ready.wait()
            if self._pool is None:
                return Outcome(stopped="the sandbox's workers are not running")
            return await _Run(self._pool, self.settings, host).run(code)
        finally:
            left = self._holding.pop(principal) - 1
            if left:
                self._holding[principal] = left


@dataclass
class _Printed:
    parts: list[str]
    size: int = 0
    cut: bool = False

    def __call__(self, stream: str, text: str) -> None:
        room = PRINTED_BYTES - self.size
        if room <= 0:
            self.cut = True
            return
        data = text.encode()
        if len(data) > room:
            text, self.cut = data[:room].decode(errors="ignore"), True
        self.parts.append(text)
        self.size += min(len(data), room)

    @property
    def text(self) -> str:
        joined = "".join(self.parts)
        return joined + (f"\n[printed output cut at {PRINTED_BYTES:,} bytes]" if self.cut else "")


_current: ContextVar[_Run | None] = ContextVar("mcp_router_code_run", default=None)


class _Run:
    """One program's run: its calls counted and cancellable, its end read as an Outcome."""

    def __init__(self, pool: AsyncMonty, settings: CodeSettings, host: Host) -> None:
        self.pool, self.settings, self.host = pool, settings, host
        self.calls = 0
        self.stopped: str | None = None
        self.in_flight: set[anyio.CancelScope] = set()
        self.scope = anyio.CancelScope()
        self.clock = anyio.CancelScope(deadline=anyio.current_time() + settings.max_total_seconds)

    async def run(self, code: str) -> Outcome:
        from pydantic_monty import MontyCrashedError, MontyError

        settings = self.settings
        limits: Any = {
            "max_feed_duration_secs": settings.max_seconds,
            "max_total_sleep_secs": settings.max_seconds,
            "max_memory": settings.max_memory_mb * _MIB,
            "max_suspensions": max(1000, settings.max_tool_calls * 10),
        }
        printed = _Printed([])
        lookup = {"call_tool": self.call_tool, "search_tools": self.search_tools}
        started = time.perf_counter()
        value: Any = None
        error: str | None = None
        token = _current.set(self)  # the host functions run in copies of this context
        try:
            with self.scope, self.clock:
                async with self.pool.checkout(script_name="program.py", limits=limits) as session:
                    value = await session.feed_run(
                        code, external_lookup=lookup, print_callback=printed
                    )
        except TimeoutError:  # the checkout's wait
            self.stopped = (
                f"no sandbox worker was free for {CHECKOUT_SECONDS:g} s "
                f"({settings.max_workers} programs already ran: router.code.max_workers)"
            )
        except MontyCrashedError as exc:
            self.stopped = f"the sandbox's worker process ended ({exc}); the pool replaces it"
        except MontyError as exc:
            self.stopped = self.stopped or _limit_named(exc, settings)
            error = None if self.stopped else _display(exc)
        finally:
            _current.reset(token)
            for call in list(self.in_flight):
                call.cancel()
        if self.clock.cancelled_caught and self.stopped is None:
            self.stopped = (
                f"it ran longer than {settings.max_total_seconds:g} s in all, tool calls "
                "included (router.code.max_total_seconds)"
            )
        return Outcome(
            value=value if error is None and self.stopped is None else None,
            printed=printed.text,
            error=error,
            stopped=self.stopped,
            calls=self.calls,
            seconds=time.perf_counter() - started,
        )

    async def call_tool(self, name: Any, arguments: Any = None) -> Any:
        if not isinstance(name, str) or not name:
            raise TypeError("call_tool(name, arguments): name must be a tool's name (a str)")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise TypeError(f"call_tool({name!r}, arguments): arguments must be a dict")
        return await self._counted(lambda: self.host.call_tool(name, arguments))

    async def search_tools(self, query: Any, k: Any = None) -> Any:
        if not isinstance(query, str) or not query.strip():
            raise TypeError("search_tools(query, k): query must be a non-empty str")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool)):
            raise TypeError("search_tools(query, k): k must be an int")
        return await self._counted(lambda: self.host.search_tools(query, k))

    async def _counted(self, work: Callable[[], Awaitable[Any]]) -> Any:
        self.calls += 1
        if self.calls > self.settings.max_tool_calls:
            self.stopped = (
                f"it made more than {self.settings.max_tool_calls} tool calls "
                "(router.code.max_tool_calls)"
            )
            self.scope.cancel()
            raise RuntimeError(f"mcp-router: {self.stopped}")
        with anyio.CancelScope() as call:
            self.in_flight.add(call)
            try:
                return await work()
            except CallRefused as exc:
                raise exc.kind(str(exc)) from None
            except Exception:
                logger.exception("a program's call failed inside the router")
                raise RuntimeError("mcp-router: the call failed inside the router") from None
            finally:
                self.in_flight.discard(call)
        raise RuntimeError("mcp-router: the run ended")  # cancelled by the run's end


def _limit_named(exc: Any, settings: CodeSettings) -> str | None:
    """The limit a sandbox error means, as the setting that sets it; None for the program's
    own errors (a `TimeoutError` it raised itself names no limit)."""
    inner = exc.exception() if hasattr(exc, "exception") else None
    message = str(inner) if inner is not None else str(exc)
    if isinstance(inner, TimeoutError) and "limit exceeded" in message:
        return (
            f"it ran longer than {settings.max_seconds:g} s of its own time "
            "(router.code.max_seconds)"
        )
    if isinstance(inner, MemoryError) and "memory limit exceeded" in message:
        return (
            f"it used more than {settings.max_memory_mb} MiB of memory (router.code.max_memory_mb)"
        )
    if isinstance(inner, RuntimeError) and message.startswith("suspension limit"):
        return (
            f"it paused for the host more than {max(1000, settings.max_tool_calls * 10)} times "
            "(calls, sleeps and lookups; router.code.max_tool_calls sets it)"
        )
    return None


def _display(exc: Any) -> str:
    display = getattr(exc, "display", None)
    if callable(display):
        try:
            return str(display("traceback"))
        except Exception:  # a display that fails still leaves the message
            pass
    return str(exc)
