"""The tasks this router process keeps, by id, and the bounds on them.

Tasks are bounded: `per_principal` running at once per principal and `max_tasks` kept in all
(past it the oldest finished is forgotten; with none finished a new one is refused). A task
lives `ttl_s` from its creation: a call still running then is cancelled, and the task is
forgotten. Only its principal finds it; to anyone else its id is unknown, as a guessed one
is; so are its status changes, which reach its principal's listen streams only
(`router.server.tasks.listening`). The calls themselves run in this table's task group
(`router.server.tasks.runner`)."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator

import anyio
import anyio.abc

from router.config import RouterConfig
from router.config.servers import TaskSettings
from router.core.errors import InvalidParams
from router.server.access.authorization import current_access
from router.server.tasks.modes import TaskModes
from router.server.tasks.task import Hear, Note, Task

UNKNOWN = "mcp-router: no such task (unknown, expired, or not yours)"
"""Said for another principal's task, an expired one and a guessed id alike."""


class Tasks:
    """This process's tasks."""

    def __init__(self, settings: TaskSettings | None = None, modes: TaskModes | None = None):
        self.settings = settings or TaskSettings()
        self.modes = modes or TaskModes(self.settings.mode)
        self._tasks: dict[str, Task] = {}
        self._listeners: dict[object, tuple[str, frozenset[str], Hear]] = {}
        """Listen streams' (principal, task ids, hear): as many as the streams, bounded."""
        self.group: anyio.abc.TaskGroup | None = None
        """Where the tasks' calls run; None until `run` started (no tasks then)."""

    @classmethod
    def from_config(cls, config: RouterConfig) -> Tasks:
        return cls(config.router.tasks, TaskModes.from_config(config))

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The task group the tasks' calls run in, for the router's life."""
        async with anyio.create_task_group() as group:
            self.group = group
            task_status.started()
            await anyio.sleep_forever()

    def find(self, task_id: str) -> Task:
        """The caller's task `task_id`; another principal's, an expired or a guessed id is
        unknown alike (-32602)."""
        self._forget_expired()
        task = self._tasks.get(task_id)
        if task is None or not task.visible or task.owner != caller():
            raise InvalidParams(UNKNOWN)
        return task

    def admit(self, tool: str, note: Note | None, *, required: bool) -> Task | None:
        """A new task of the caller's for `tool`; over a bound None, or, `required`, refused."""
        settings, owner = self.settings, caller()
        self._forget_expired()
        running = sum(t.owner == owner and not t.finished for t in self._tasks.values())
        refusal = None
        if running >= settings.per_principal:
            refusal = (
                f"mcp-router: you run {settings.per_principal} tasks already, your share "
                "(router.tasks.per_principal); wait for one to end, or cancel one"
            )
        elif len(self._tasks) >= settings.max_tasks and not self._forget_oldest_finished():
            refusal = (
                f"mcp-router: this router runs {settings.max_tasks} tasks already "
                "(router.tasks.max_tasks); try again later"
            )
        if refusal is not None:
            if required:
                raise InvalidParams(refusal)
            return None
        now = time.time()
        task = Task(secrets.token_urlsafe(24), owner, tool, now, now + settings.ttl_s, note, now)
        task.heard = self._heard
        self._tasks[task.id] = task
        return task

    @contextlib.contextmanager
    def listening(self, owner: str, ids: list[str], hear: Hear) -> Iterator[None]:
        """While open, `hear` is told each status `owner`'s tasks among `ids` enter; another
        principal's tasks are never told, whatever their ids."""
        token = object()
        self._listeners[token] = (owner, frozenset(ids), hear)
        try:
            yield
        finally:
            del self._listeners[token]

    def _heard(self, task: Task) -> None:
        for owner, ids, hear in list(self._listeners.values()):
            if owner == task.owner and task.id in ids:
                hear(task)

    def drop(self, task: Task) -> None:
        """Forget a task the host was never given (an `auto` call that ended early)."""
        self._tasks.pop(task.id, None)

    def _forget_expired(self) -> None:
        now = time.time()
        for task_id in [i for i, t in self._tasks.items() if t.expires <= now]:
            self._tasks.pop(task_id).scope.cancel()

    def _forget_oldest_finished(self) -> bool:
        finished = [t for t in self._tasks.values() if t.finished]
        if not finished:
            return False
        del self._tasks[min(finished, key=lambda t: t.updated).id]
        return True


def caller() -> str:
    """Whose tasks the current request reads: its principal's key, "" without identities."""
    principal = current_access().principal
    return principal.key if principal is not None else ""
