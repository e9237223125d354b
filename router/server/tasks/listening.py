"""`notifications/tasks` on a `subscriptions/listen` stream: the whole task, pushed at each
status it enters, to a stream that asked for its id.

A 2026-07-28 host that declared the tasks extension on its listen request may name tasks in
its filter (`notifications.taskIds`); the acknowledgement echoes the ids honoured (at most
`MAX_TASK_IDS`). A task's changes reach only its own principal's streams: another principal's
stream naming the id hears nothing, as for a guessed id. The SDK's `ListenHandler` serves the
stream and writes its acknowledgement first; the tasks' frames follow it on the same stream,
stamped with the same subscription id. A stream whose host stops reading is ended at
`BUFFERED` frames (the host listens again and polls), as the SDK ends its own."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, cast

import anyio
import mcp_types as types
from mcp.server.session import ServerSession
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from router.server.lifecycle.requests import Context
from router.server.tasks.extension import declares_tasks
from router.server.tasks.table import caller
from router.server.tasks.task import Task
from router.server.tasks.wire import detailed

logger = logging.getLogger(__name__)

TASK_IDS = "taskIds"
"""The filter's key the extension adds to `subscriptions/listen`."""
MAX_TASK_IDS = 100
"""Task ids one stream may name."""
BUFFERED = 64
"""Task frames a stream holds for a host that is slow to read."""

Handler = Callable[
    [Context, types.SubscriptionsListenRequestParams], Awaitable[types.SubscriptionsListenResult]
]


class TaskNotification(types.Notification[dict[str, Any], Literal["notifications/tasks"]]):
    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: dict[str, Any]


def requested(ctx: Context, params: types.SubscriptionsListenRequestParams) -> list[str]:
    """The task ids a listen request asks for: none unless it declared the extension."""
    ids = (params.notifications.model_extra or {}).get(TASK_IDS)
    if not declares_tasks(ctx) or not isinstance(ids, list):
        return []
    return list(dict.fromkeys(i for i in ids if isinstance(i, str)))[:MAX_TASK_IDS]


async def serve(
    handler: Handler, ctx: Context, params: types.SubscriptionsListenRequestParams
) -> types.SubscriptionsListenResult:
    """The listen stream `handler` serves, with `notifications/tasks` for the ids it asks."""
    ids = requested(ctx, params)
    if not ids:
        return await handler(ctx, params)
    meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](BUFFERED)
    session = _Acknowledging(ctx.session, ids)
    poll_ms = ctx.lifespan_context.tasks.settings.poll_ms
    answer: types.SubscriptionsListenResult | None = None
    ended = anyio.CancelScope()  # by a host that stopped reading

    def hear(task: Task) -> None:
        frame = {k: v for k, v in detailed(task, poll_ms).items() if k != "resultType"}
        try:
            send.send_nowait({**frame, "_meta": meta})
        except anyio.WouldBlock:
            logger.warning("listen stream %r: task frames unread; ending it", ctx.request_id)
            ended.cancel()

    async def forward() -> None:
        await session.acknowledged.wait()  # the acknowledgement is the stream's first frame
        async for frame in receive:
            notification = cast(types.ServerNotification, TaskNotification(params=frame))
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)

    listening = ctx.lifespan_context.tasks.listening(caller(), ids, hear)
    with ended, send, receive, listening:
        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            streamed = dataclasses.replace(ctx, session=cast(ServerSession, session))
            answer = await handler(streamed, params)
            group.cancel_scope.cancel()
    if answer is None:  # ended for a slow host: as the SDK's, the stream just ends
        return types.SubscriptionsListenResult(_meta=meta)
    return answer


class _Acknowledging:
    """The stream's session as the SDK's handler writes it: its acknowledgement echoes the
    task ids honoured, and says when it is sent."""

    def __init__(self, session: ServerSession, ids: list[str]) -> None:
        self._session = session
        self._ids = ids
        self.acknowledged = anyio.Event()

    async def send_notification(
        self,
        notification: types.ServerNotification,
        related_request_id: types.RequestId | None = None,
    ) -> None:
        if isinstance(notification, types.SubscriptionsAcknowledgedNotification):
            honored = notification.params.notifications.model_dump(by_alias=True, exclude_none=True)
            notifications = types.SubscriptionFilter.model_validate(
                {**honored, TASK_IDS: self._ids}
            )
            params = notification.params.model_copy(update={"notifications": notifications})
            notification = notification.model_copy(update={"params": params})
        await self._session.send_notification(notification, related_request_id)
        if isinstance(notification, types.SubscriptionsAcknowledgedNotification):
            self.acknowledged.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)
