"""The config file applied while serving (`router.reload`): watched for changes (watchfiles)
and read again on SIGHUP, each time applied at once, without a restart.

What a change does (`router.config.diff` tells them apart): an added server starts, or is
indexed from its cached listing if it may be lazy; a removed one stops and its tools leave
the index; a changed entry restarts that upstream alone (a change of its timeouts only
retimes it); `k`, `pin`, `policy`, `profiles`, `limits.result_tokens`, `timeouts`, `include`,
`exclude`, `disabled` and `start` apply to the next request; any other `router` setting is
logged as needing a restart.

The settings are swapped, not synced: the new config's `Settings` replace the state's in one
assignment, first, so every request from then on is ruled on by the new policy and profiles
(`router.server.lifecycle.settings.authorize_call`), while the index is still being rebuilt. Removed
servers' tools then leave the index, and the pool stops them; a call reaching one meanwhile
is `UpstreamUnavailable`, naming it (`UpstreamPool.upstream`).
Hosts whose listing changed hear `notifications/tools/list_changed` (`ListChanges`), and a
search made meanwhile waits for the added servers as one made at start does.

A file that does not load (bad JSON, a bad field) changes nothing: the router goes on serving
the last good config, and the error, naming the file, the field and the fix as at start, goes
to the log and, on stdio, to the host as a log notification (`HostRelay.tell_host`).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskStatus

from router.config import DEFAULT_CONNECT_TIMEOUT, RouterConfig
from router.config.diff import ConfigDiff, config_diff
from router.core.errors import ConfigError
from router.pinning.origin import origins_of
from router.server.lifecycle.settings import Settings, served

if TYPE_CHECKING:
    from router.server.lifecycle.state import RouterState

logger = logging.getLogger(__name__)

WATCH_STEP_MS = 50
"""How long the file must stay unchanged before it is read (an editor writes in bursts)."""


class ConfigReload:
    """Applies the config file to a running `RouterState` whenever it changes."""

    def __init__(
        self, state: RouterState, config: RouterConfig, read: Callable[[], RouterConfig]
    ) -> None:
        """`read` loads the file as the router was started with it (the CLI's overrides
        applied); it runs in a worker thread and raises `ConfigError`."""
        self._state = state
        self.config = config
        """The file as last applied (what the next read is compared with)."""
        self._started = config
        """What the router started with: the settings read at start only keep its values."""
        self._read = read
        self._lock = anyio.Lock()
        self._file = config.source.absolute() if config.source is not None else None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch the file and SIGHUP as `router.reload` says, for the router's life; started
        (`task_status`) once both are watched, so no change made after that is missed."""
        file, mode = self._file, self.config.router.reload
        if file is None or mode == "off":
            task_status.started()
            return
        async with anyio.create_task_group() as group:
            if mode == "watch":
                group.start_soon(self._watch, file)
            if hasattr(signal, "SIGHUP"):
                group.start_soon(self._on_hangup)
            # Each task's first step sets its watch up before it first waits (the watcher's
            # inotify registration, the signal handler), and they run before this resumes.
            await anyio.lowlevel.checkpoint()
            task_status.started()

    async def _watch(self, file: Path) -> None:
        from watchfiles import awatch

        def is_config(_change: object, path: str) -> bool:
            return Path(path) == file

        logger.info("watching %s: a change is applied without a restart", file)
        # watchfiles waits for changes in a worker thread that a cancellation cannot
        # interrupt: only its stop event ends the wait early, else the router's exit waited
        # up to 5 s (its Rust timeout) for it. So the stop event is set as the task is
        # cancelled, and the thread sees it within a step.
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(_set_when_cancelled, stop)
            # The folder, not the file: editors save by writing a new file and renaming it.
            changes = awatch(
                file.parent,
                watch_filter=is_config,
                recursive=False,
                step=WATCH_STEP_MS,
                stop_event=stop,
            )
            async for _ in changes:
                await self.apply("the file changed")
            group.cancel_scope.cancel()

    async def _on_hangup(self) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGHUP)
            signals = receiver.__enter__()
        except (ValueError, RuntimeError, NotImplementedError) as exc:  # not the main thread
            logger.info("SIGHUP does not reload the config here: %s", exc)
            return
        try:
            async for _ in signals:
                await self.apply("SIGHUP")
        finally:
            receiver.__exit__(None, None, None)

    async def apply(self, why: str) -> ConfigDiff | None:
        """Read the file and apply what changed; None when it does not load."""
        async with self._lock:
            try:
                new = await anyio.to_thread.run_sync(self._read)
            except ConfigError as exc:
                message = f"config not applied ({why}); still serving the last good one: {exc}"
                logger.error("%s", message)
                await self._state.relay.tell_host("error", message)
                return None
            diff = config_diff(self.config, new)
            if diff.empty:
                logger.info("config %s read (%s): nothing changed", new.source, why)
                return diff
            await self._adopt(new, diff)
            self.config = new
            logger.info("config %s applied (%s): %s", new.source, why, diff.summary())
            for key in diff.need_restart:
                message = f"router.{key} changed in {new.source}: it applies at the next start"
                logger.warning("%s", message)
                await self._state.relay.tell_host("warning", message)
            return diff

    async def _adopt(self, new: RouterConfig, diff: ConfigDiff) -> None:
        state, config = self._state, served(self._started, new)
        settings = state.settings = Settings.from_config(config)  # the one swap
        # Always a rebuild: pins, names and the meta-tools' `k` shape every listing.
        state.index.reconfigure(settings.pins, settings.policy, settings.names, settings.transforms)
        for name in diff.removed:
            state.index.remove(name)
        await state.pool.reconfigure(config, diff)
        for name in diff.restarted:
            upstream = state.pool.upstreams.get(name)
            if upstream is None or not upstream.tools:  # not lazy from a cached listing
                state.index.remove(name)
        pins = state.index.pinning.store
        if pins is not None and (diff.added or diff.restarted):
            # Pins are keyed by what each server is (router.pinning.origin): the new
            # entries' keys apply once the old tools left, so no old tool is recorded as
            # the new server's; the rebuild decides the tools again under them.
            pins.serve(origins_of(config))
            state.index.reconfigure(
                settings.pins, settings.policy, settings.names, settings.transforms
            )
        if diff.added or diff.restarted:
            # A search now waits for the new upstreams as one at start does.
            budget = config.router.timeouts.connect or DEFAULT_CONNECT_TIMEOUT
            deadline = anyio.current_time() + budget
            state.readiness.startup_deadline = max(state.readiness.startup_deadline, deadline)
        state.changes.notify()


async def _set_when_cancelled(event: anyio.Event) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        event.set()
