"""The routed MCP server: the SDK's low-level `Server` with handlers that read the
`RouterState` from the lifespan context."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp_types import NotificationParams

from router import __version__
from router.approvals.sealing import Sealer
from router.config import DEFAULT_CONNECT_TIMEOUT, RouterConfig
from router.core.catalog import ToolSpec
from router.core.changes import Changes
from router.core.errors import EmbeddingError
from router.embedding.base import Embedder
from router.embedding.cache import default_cache_dir
from router.pinning import Pinning, PinStore, origins_of
from router.retrieval.types import DEFAULT, STEP_WEIGHT
from router.retrieval.usage import USAGE_FILE
from router.retrieval.usage_scopes import UsageScopes
from router.server.access.authorization import authorize, visible_upstreams
from router.server.calls import audit
from router.server.calls.approval import Approvals
from router.server.calls.held_calls import HeldCalls
from router.server.calls.relay import HostRelay
from router.server.lifecycle.errors import errors_as_mcp
from router.server.lifecycle.instructions import tell_instructions
from router.server.lifecycle.observe import count_requests
from router.server.lifecycle.on_request import (
    AGGREGATE,
    DISPATCH,
    LISTING,
    answered,
    on_request,
    warm_up,
)
from router.server.lifecycle.readiness import Readiness
from router.server.lifecycle.reload import ConfigReload
from router.server.lifecycle.settings import Settings
from router.server.lifecycle.state import RouterState
from router.server.listing import apps
from router.server.listing.door import INSTRUCTIONS
from router.server.listing.index import LiveIndex
from router.server.listing.passthrough import every_tool, listing_key, records_key
from router.server.results.kept import KeptResults
from router.server.sessions.listen import ListenStreams
from router.server.tasks.methods import Tasks, listen_with_tasks, serve_tasks
from router.store.base import VectorStore
from router.store.opening import open_store
from router.upstream import UpstreamPool
from router.upstream.connection.eras import HostEra
from router.upstream.listing.cache import ListingCache
from router.upstream.state import UpstreamStatus

logger = logging.getLogger(__name__)

_P = TypeVar("_P")
_R = TypeVar("_R")


def load_default_embedder(config: RouterConfig) -> Embedder:
    """The configured model (imported and loaded later, in a worker thread)."""
    from router.embedding.loading import load_embedder

    return load_embedder(config.router.model, config.router.cache_dir)


@asynccontextmanager
async def router_state(
    config: RouterConfig,
    embedder: Embedder | None,
    store: VectorStore | None = None,
    *,
    one_host: bool = False,
    read_config: Callable[[], RouterConfig] | None = None,
) -> AsyncIterator[RouterState]:
    """Start the upstream pool, the model load and the indexer together; yield the state
    handlers read. Nothing here waits for them: requests that need them do (`RouterState`).

    `store` is the opened `open_store(config)`; without one, it is opened here (a shared
    store's `StoreError` then comes from here). `one_host` (stdio): the upstreams mirror that
    host's protocol era (`router.upstream.connection.eras`). `read_config` reads the config file
    again (`serve` gives it): with it, the file is applied while serving (`...lifecycle.reload`).
    """
    settings = config.router
    cache_dir = settings.cache_dir or default_cache_dir()
    owned = store is None
    if store is None:
        store = await anyio.to_thread.run_sync(open_store, config)
    try:
        era = HostEra() if one_host else None
        async with _router_state(config, embedder, store, cache_dir, era, read_config) as state:
            yield state
    finally:
        if owned:
            await anyio.to_thread.run_sync(store.close)


@asynccontextmanager
async def _router_state(
    config: RouterConfig,
    embedder: Embedder | None,
    store: VectorStore,
    cache_dir: Path,
    era: HostEra | None,
    read_config: Callable[[], RouterConfig] | None,
) -> AsyncIterator[RouterState]:
    settings = config.router
    # Learning is one user's: on by default for one host, and on a front with identities
    # (each principal learns apart); on a shared front without them only if asked.
    identities = settings.http.oauth is not None and era is None
    learn = settings.learn if settings.learn is not None else era is not None or identities
    usage_dir = cache_dir if learn else None
    changes = Changes()
    current = Settings.from_config(config)  # what handlers read; a reload swaps another in
    ranking = dataclasses.replace(DEFAULT, step_weight=STEP_WEIGHT if settings.steps else 0.0)
    pins = PinStore.serving(store.pin_backend(), cache_dir, origins_of(config))  # by origin
    index = LiveIndex(
        embedder,
        store,
        pins=[str(p) for p in settings.pin],
        on_swap=changes.notify,
        ranking=ranking,
        names=current.names,
        policy=current.policy,
        transforms=current.transforms,
        pinning=Pinning(
            settings.pinning,
            # with a shared store, the fleet's pins: no replica trusts on first use
            # what another saw (router.store.pins)
            pins if settings.pinning != "off" else None,
            config.source,
        ),
    )
    # Requests at start wait at most the router-wide connect timeout for starting upstreams;
    # an upstream given a longer one of its own is named as still starting after that.
    connect_budget = settings.timeouts.connect or DEFAULT_CONNECT_TIMEOUT

    async def on_tools_changed(server: str, specs: tuple[ToolSpec, ...]) -> None:
        index.submit(server, specs)

    def on_status_changed(_: UpstreamStatus) -> None:
        changes.notify()

    relay = HostRelay(one_host=era is not None)  # on stdio, the one host is the only user
    # Replicas of one store share the key that seals a 2026-07-28 host's request states and
    # the ledger that spends their nonces: a retry may reach any of them, and a state
    # authorizes one thing once across all (router.approvals.sealing).
    key = await anyio.to_thread.run_sync(store.shared_secret, "approvals")
    sealer = Sealer(key, store.nonce_ledger())
    approvals = Approvals(sealer)
    async with anyio.create_task_group() as task_group:
        await task_group.start(index.run)
        async with UpstreamPool(
            config,
            on_tools_changed=on_tools_changed,
            on_status_changed=on_status_changed,
            host=relay,
            era=era,
            # with a shared store, its records: what one replica listed or signed in to,
            # every replica reads (router.store.shared_records)
            listings=ListingCache(cache_dir, store.records()),
            credentials=store.records(),
        ) as pool:
            readiness = Readiness(
                index, pool, changes, startup_deadline=anyio.current_time() + connect_budget
            )
            listen = ListenStreams(index, pool, settings.mode, listen_with_tasks)
            state = RouterState(
                index=index,
                listen=listen,
                pool=pool,
                readiness=readiness,
                relay=relay,
                config_settings=current,
                approvals=approvals,
                sealer=sealer,
                held=HeldCalls(sealer),
                tasks=Tasks.from_config(config),
                store=store,
                kept=KeptResults.from_config(config),
                era=era,
                audit=audit.trail_for(config),
            )
            if "code" in config.modes:  # code mode's sandbox, imported only when configured
                from router.server.code_mode.runs import CodeRuns

                state.code = CodeRuns.from_config(config, sealer)
            if state.audit is not None:
                state.audit.on_write = state.metrics.audit_written
            state.quota_buckets = store.quota_buckets()  # None: each replica counts its own
            rerank = cache_dir if settings.rerank and embedder else None
            task_group.start_soon(_load_model, embedder, state, usage_dir, rerank)
            task_group.start_soon(warm_up, state)
            task_group.start_soon(listen.run, changes)
            await task_group.start(state.held.run)
            await task_group.start(state.tasks.run)
            if state.code is not None:  # code mode: the sandbox's workers start warm
                await task_group.start(state.code.run)
            task_group.start_soon(state.list_changes.run, index, _listing_of(state))
            if read_config is not None:
                await task_group.start(ConfigReload(state, config, read_config).run)
            yield state
        task_group.cancel_scope.cancel()


def _listing_of(state: RouterState) -> Callable[[], str]:
    """The key of what a handshake-era host's `tools/list` holds (`ListChanges`)."""
    if state.settings.mode == "all":
        return lambda: listing_key(every_tool(state.snapshot, state.pool))

    def key() -> str:  # every endpoint's pins too: a change to any is announced
        every = [state.config_settings, *state.config_settings.endpoints.values()]
        return " ".join(records_key([*state.pinned(s), *state.meta_tools]) for s in every)

    return key


async def _load_model(
    embedder: Embedder | None,
    state: RouterState,
    usage_dir: Path | None,
    rerank: Path | None = None,
) -> None:
    """Load the model in a worker thread while the upstreams connect, so neither the first
    index nor the first query pays for it. A model that fails to load is reported by the
    index, which then ranks with BM25 alone. Usage feedback opens with it: its vectors are
    the model's. The reranker (`router.rerank`, its cache in `rerank`) loads too; one that
    cannot is logged and searches go on without it."""
    try:
        if embedder is not None:
            await anyio.to_thread.run_sync(embedder.load)
            if rerank is not None:
                from router.retrieval.rerank import Reranker  # only when asked

                reranker = Reranker.bundled(rerank)
                try:
                    await anyio.to_thread.run_sync(reranker.load)
                    state.searcher.reranker = reranker
                    logger.info(
                        "reranker %s: the first %d at weight %g",
                        reranker.directory.name,
                        reranker.depth,
                        reranker.weight,
                    )
                except EmbeddingError as exc:
                    logger.error("reranker unusable, searching without it: %s", exc)
            if usage_dir is not None:
                # with a shared store, its table: every replica learns alike
                usage = UsageScopes(embedder.model_id, usage_dir, shared=state.store.usage())
                await anyio.to_thread.run_sync(usage.memory_for, None)  # the file is readable
                state.searcher.usage = usage
    except EmbeddingError as exc:
        logger.error("embedding model unusable: %s", exc)
    except Exception as exc:  # a damaged usage file costs the feedback, not the router
        logger.warning(
            "usage feedback off: %s cannot be read (%s)", usage_dir and usage_dir / USAGE_FILE, exc
        )
    finally:
        state.readiness.model_ready.set()
        state.changes.notify()


async def _note_host(ctx: ServerRequestContext[RouterState, Any], call_next: CallNext) -> Any:
    """Once a host that has roots finishes its handshake, upstreams that asked for roots
    before any host was there (and were refused) are told to ask again."""
    result = await call_next(ctx)
    state = ctx.lifespan_context
    if state.era is not None:
        state.era.learn(ctx.session.protocol_version, ctx.session.client_capabilities, ctx.params)
    if ctx.method == "notifications/initialized" and state.relay.seen(ctx):
        await state.pool.roots_changed()
    return result


async def _listen(
    ctx: ServerRequestContext[RouterState, Any], params: types.SubscriptionsListenRequestParams
) -> types.SubscriptionsListenResult:
    """`subscriptions/listen` (2026-07-28): the router's own streams
    (`router.server.sessions.listen`).
    A stream hears updates only of resources the caller may see: the others are dropped from
    its request, as unknown URIs are. Each watch it starts is metered and audited as a
    `resources/subscribe` (`router.server.calls.passage`)."""
    from router.server.calls import passage  # imported by then (`on_request.ON_REQUEST`)

    listen = ctx.lifespan_context.listen
    assert listen is not None  # every router state has its streams
    visible = visible_upstreams(ctx.lifespan_context.pool.upstreams)
    return await listen.serve(ctx, params, visible, functools.partial(passage.watch, ctx))


async def _roots_changed(
    ctx: ServerRequestContext[RouterState, Any], params: NotificationParams | None
) -> None:
    """The host's roots changed: every upstream hears it and asks again."""
    await ctx.lifespan_context.pool.roots_changed()


class RouterServer(Server[RouterState]):
    """The SDK server with the router's capabilities as the handshake default: the streamable
    HTTP session manager builds the `initialize` answer without asking for options."""

    notification_options = NotificationOptions()

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or self.notification_options,
            experimental_capabilities,
            extensions,
        )


def build_server(
    config: RouterConfig,
    embedder: Embedder | None,
    *,
    state: RouterState | None = None,
    read_config: Callable[[], RouterConfig] | None = None,
) -> Server[RouterState]:
    """The routed server. Its lifespan starts the upstreams and the index (and applies the
    config file while serving, with `read_config`); given `state`, it serves that one and
    starts nothing (an HTTP front shares one state among its sessions)."""

    @asynccontextmanager
    async def lifespan(_: Server[RouterState]) -> AsyncIterator[RouterState]:
        if state is not None:
            yield state
            return
        async with router_state(config, embedder, one_host=True, read_config=read_config) as own:
            yield own

    server = RouterServer(
        "mcp-router",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=on_request(LISTING, "list_tools"),
        on_list_resources=on_request(AGGREGATE, "list_resources"),
        on_list_resource_templates=on_request(AGGREGATE, "list_resource_templates"),
        on_read_resource=errors_as_mcp(on_request(AGGREGATE, "read_resource")),
        on_list_prompts=on_request(AGGREGATE, "list_prompts"),
        on_get_prompt=errors_as_mcp(on_request(AGGREGATE, "get_prompt")),
        on_completion=errors_as_mcp(on_request(AGGREGATE, "complete")),
        on_subscribe_resource=errors_as_mcp(on_request(AGGREGATE, "subscribe")),
        on_subscriptions_listen=errors_as_mcp(_listen),
        on_unsubscribe_resource=errors_as_mcp(on_request(AGGREGATE, "unsubscribe")),
    )
    # Roots are deprecated from 2026-07-28 on (the constructor argument warns), but hosts on
    # the handshake revisions still announce changes, and upstreams should hear them.
    server.add_notification_handler(
        "notifications/roots/list_changed", NotificationParams, _roots_changed
    )
    server.middleware.append(answered)  # then the handlers' modules load (`warm_up`)
    server.middleware.append(_note_host)
    server.middleware.append(count_requests)  # requests by surface and method (/metrics)
    # The one door: a method without a rule is refused; every other runs with its Access.
    server.middleware.append(authorize)
    server.add_request_handler(
        "tools/call", types.CallToolRequestParams, on_request(DISPATCH, "call_tool")
    )
    serve_tasks(server)  # the tasks extension: advertised, its methods served
    server.middleware.append(tell_instructions)  # what the caller may see is behind the door
    # By method: the constructor's `on_set_logging_level` warns that logging is deprecated at
    # 2026-07-28; the handshake revisions have it.
    server.add_request_handler(
        "logging/setLevel",
        types.SetLevelRequestParams,
        on_request(AGGREGATE, "set_logging_level"),
    )
    # `notifications/tools/list_changed` in every mode: dynamic mode announces each
    # session's new tools, pass-through mode every change of the catalog, and the default
    # listing changes with a pinned tool or a config applied while serving (`ListChanges`).
    server.notification_options = NotificationOptions(tools_changed=True)
    server.extensions.update(apps.SERVED)  # only what the router carries (apps.py)
    return server
