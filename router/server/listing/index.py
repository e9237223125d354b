"""The live index: the catalog and retriever of every upstream's tools, rebuilt as they change.

Upstreams report their tools whenever they (re)list. Each report replaces that upstream's
tools and marks the index dirty; one rebuild task builds a new snapshot for all reports that
arrived meanwhile, in a worker thread (embedding is blocking), reusing cached vectors so only
new or changed tools are embedded. Readers always see a complete snapshot, swapped in whole.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from router.core.apps import UiUris, app_only, with_app_uris
from router.core.catalog import Catalog, ToolRecord, ToolSpec
from router.core.changes import Changes
from router.core.errors import EmbeddingError, StoreError
from router.core.memory import release_free_memory, settle_long_lived
from router.core.naming import NameRules
from router.core.tool_patterns import resolve_pins
from router.embedding.base import Embedder
from router.pinning import Hold, Pinning
from router.pinning.watching import watch_approvals
from router.policy.rules import ToolPolicy
from router.retrieval.types import DEFAULT, Ranking
from router.server.listing.suggestions import NameMatcher
from router.store.base import VectorStore
from router.store.local import LocalStore

if TYPE_CHECKING:  # numpy and bm25s load in the first rebuild's worker thread
    from router.retrieval.retriever import Retriever
    from router.shaping.transforms import Transforms  # configured only (`Settings`)

logger = logging.getLogger(__name__)

STORE_RETRY_SECONDS = 5
"""How soon a rebuild that found the shared store down tries it again."""
TOUCH_INTERVAL_SECONDS = 6 * 3600
"""How often a live index tells the store its tools are still served (it prunes after 7 days)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One consistent view: the catalog, its retriever and the pinned tools in it."""

    catalog: Catalog
    retriever: Retriever | None
    """None only before the first rebuild (an empty catalog): the server answers
    `initialize` without waiting for the retrieval libraries to load."""
    pinned: tuple[ToolRecord, ...]
    generation: int
    denied: Mapping[str, ToolRecord] = field(default_factory=dict)
    """Tools `router.policy` denies, by qualified name: never listed or searched, kept so
    that a call to one can say which rule denies it."""
    flagged: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Tools whose text reads like instructions to the model (`router.policy.injection`), by
    qualified name: the rules that matched in the tool's own text or its server's."""
    held: Mapping[str, Hold] = field(default_factory=dict)
    """Tools that tool pinning holds (`router.pinning`), by qualified name: changed since
    approved, or new under `strict`. Like denied tools, never listed or searched."""
    names: NameMatcher | None = None
    """The catalog's names counted for suggestions, built with the snapshot in the rebuild's
    worker thread, so that the first unknown name after a swap does not build it while the
    event loop waits for the GIL."""
    app_only: frozenset[int] = frozenset()
    """Catalog positions of the tools for an MCP app alone (`_meta.ui.visibility` without
    "model"): never listed, searched or pinned for the model, yet callable by the host."""
    ui_uris: UiUris = field(default_factory=UiUris)
    """The `ui://` URIs the tools name, made distinct across upstreams (`router.core.apps`);
    the resource listing places the other `ui://` resources after these."""


class LiveIndex:
    """Owns the current `Snapshot` and rebuilds it when an upstream's tools change."""

    def __init__(
        self,
        embedder: Embedder | None,
        store: VectorStore | None,
        pins: Sequence[str] = (),
        on_swap: Callable[[], None] | None = None,
        ranking: Ranking = DEFAULT,
        names: NameRules | None = None,
        policy: ToolPolicy | None = None,
        pinning: Pinning | None = None,
        transforms: Transforms | None = None,
    ) -> None:
        self._embedder = embedder
        self._transforms = transforms
        self._problems: frozenset[str] = frozenset()
        """What the transforms name that the upstreams lack, as last logged."""
        self.pinning = pinning or Pinning()
        self._policy = policy or ToolPolicy()
        self._names = names or NameRules()
        self._ranking = ranking
        self._on_swap = on_swap
        self.store = store or LocalStore(None)
        self._store_failed = False
        self._pins = tuple(pins)
        self._tools: dict[str, tuple[ToolSpec, ...]] = {}
        self._generation = 0
        self._built_from: list[ToolSpec] = []
        self._built_tools: dict[str, tuple[ToolSpec, ...]] = {}
        self._snapshot = Snapshot(Catalog.from_specs([]), None, (), 0)
        self._rebuild_lock = anyio.Lock()
        self._reconfigured = False
        self._changed = Changes()
        self._dirty = anyio.Event()
        self.ready = anyio.Event()
        """Set once a snapshot holding at least one upstream's tools is in place."""

    @property
    def pins(self) -> tuple[str, ...]:
        return self._pins

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def tools_of(self, server: str) -> tuple[ToolSpec, ...]:
        return self._tools.get(server, ())

    def has_built(self, server: str) -> bool:
        """Whether the current snapshot holds some listing of `server`'s tools (perhaps not
        its latest: a re-index may be under way)."""
        return server in self._built_tools

    def submit(self, server: str, specs: Iterable[ToolSpec]) -> None:
        """Replace `server`'s tools; `run` rebuilds soon. Never blocks the caller (an
        upstream's owner task), so embedding cannot stall that upstream's calls."""
        self._tools[server] = tuple(specs)
        self._dirty.set()

    def remove(self, server: str) -> None:
        """Drop `server`'s tools (its upstream left the config); `run` rebuilds soon."""
        if self._tools.pop(server, None) is not None:
            self._dirty.set()

    def reconfigure(
        self,
        pins: Sequence[str],
        policy: ToolPolicy,
        names: NameRules,
        transforms: Transforms | None = None,
    ) -> None:
        """A config applied while serving: the next rebuild, soon, uses these."""
        self._pins, self._policy, self._names = tuple(pins), policy, names
        self._transforms = transforms
        self._reconfigured = True
        self._dirty.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Rebuild whenever tools were submitted; run this in the server's task group."""
        task_status.started()
        async with anyio.create_task_group() as group:
            group.start_soon(self._still_serving)
            if self.pinning.on:
                group.start_soon(
                    watch_approvals, self.pinning, self.release_approved, self.recheck_pins
                )
            await self._rebuild_when_changed()

    async def _rebuild_when_changed(self) -> None:
        while True:
            if self._store_failed:  # the store was down: try again soon, changed or not
                with anyio.move_on_after(STORE_RETRY_SECONDS):
                    await self._dirty.wait()
            else:
                await self._dirty.wait()
            self._dirty = anyio.Event()
            await self.rebuild()

    async def _still_serving(self) -> None:
        """Tell the store, daily, that this snapshot's tools are still served: a shared
        store prunes tools no replica served for a week."""
        while True:
            await anyio.sleep(TOUCH_INTERVAL_SECONDS)
            records = self._snapshot.catalog.records
            if records and self._embedder is not None:
                # A failure is the store's to log; the next touch, or a rebuild, tries again.
                with contextlib.suppress(StoreError):
                    await anyio.to_thread.run_sync(self.store.touch, records)

    async def release_approved(self) -> bool:
        """Rebuild if a held tool of the current snapshot was approved since; whether one was
        (a call to a held tool asks this before it fails). Pins that failed release nothing
        (`router.pinning.watching` tries them again)."""
        held = self._snapshot.held
        if not held or not await anyio.to_thread.run_sync(self.pinning.approved_since, held):
            return False
        await self.rebuild(repin=True)
        return True

    async def recheck_pins(self) -> bool:
        """Decide the held tools of the current snapshot's catalog again (pins that failed
        may read again); rebuild only if what is held changed."""
        snapshot = self._snapshot
        changed = await anyio.to_thread.run_sync(
            self.pinning.held_changed, snapshot.catalog.records, snapshot.held
        )
        if not changed:
            return False
        await self.rebuild(repin=True)
        return True

    async def rebuild(self, *, repin: bool = False) -> Snapshot:
        """Build a snapshot of the submitted tools now (a no-op if nothing changed, unless
        `repin`: approvals changed, so the held tools are decided again)."""
        async with self._rebuild_lock:
            submitted = dict(self._tools)
            rebuild_anyway = (
                not self.ready.is_set() or self._store_failed or repin or self._reconfigured
            )
            self._reconfigured = False

            transforms = self._transforms

            def prepare() -> tuple[list[ToolSpec], tuple[Catalog, dict[str, ToolRecord]] | None]:
                # In a worker thread: naming, the search texts and a fingerprint per tool
                # take time that grows with the catalog, off the event loop.
                wanted = self._catalog_specs(submitted)
                if wanted == self._built_from and not rebuild_anyway:
                    return wanted, None
                if transforms is None:  # none configured (`router.shaping` stays unimported)
                    self._report(())
                    shaped = wanted
                else:
                    self._report(transforms.problems(submitted))
                    shaped = transforms.apply(wanted)
                return wanted, self._allowed(Catalog.from_specs(shaped, self._names))

            wanted, prepared = await anyio.to_thread.run_sync(prepare)
            if prepared is None:
                return self._snapshot
            catalog, denied = prepared
            generation = self._generation + 1
            try:
                snapshot = await anyio.to_thread.run_sync(self._build, catalog, generation, denied)
            except EmbeddingError as exc:
                # Routing must survive a broken model: fall back to BM25 and say so.
                logger.error("embedding model unusable, ranking with BM25 only: %s", exc)
                self._embedder = None
                snapshot = await anyio.to_thread.run_sync(self._build, catalog, generation, denied)
            except StoreError as exc:
                # ... and a store that went away: BM25 alone until it is back.
                logger.error(
                    "%s; ranking with BM25 only, retrying in %d s", exc, STORE_RETRY_SECONDS
                )
                self._store_failed = True
                snapshot = await anyio.to_thread.run_sync(
                    self._build, catalog, generation, denied, False
                )
            else:
                if self._store_failed:
                    logger.info("store back: dense ranking restored")
                self._store_failed = False
            self._generation = generation
            self._snapshot = snapshot
            settle_long_lived()  # the new catalog: out of the full collections' walk
            self._built_from = wanted
            self._built_tools = submitted
        logger.info(
            "index %d: %d tools from %d upstreams%s",
            snapshot.generation,
            len(snapshot.catalog),
            len(self._tools),
            f" ({len(snapshot.held)} held by tool pinning)" if snapshot.held else "",
        )
        self.ready.set()
        self._changed.notify()
        if self._on_swap is not None:
            self._on_swap()
        return snapshot

    async def wait_changed(self) -> None:
        """Wait for the next snapshot swap."""
        await self._changed.wait()

    def _report(self, problems: Sequence[str]) -> None:
        """Log what the transforms name that the upstreams lack, each once while it lasts."""
        now = frozenset(problems)
        for problem in sorted(now - self._problems):
            logger.warning("tool transforms: %s", problem)
        self._problems = now

    @staticmethod
    def _catalog_specs(tools: Mapping[str, tuple[ToolSpec, ...]]) -> list[ToolSpec]:
        # Sorted by server so qualified names and listing order never depend on which
        # upstream happened to answer first.
        return [spec for server in sorted(tools) for spec in tools[server]]

    def _allowed(self, catalog: Catalog) -> tuple[Catalog, dict[str, ToolRecord]]:
        """The catalog less what the policy denies (named first, so that denying a tool
        never renames another), and the denied tools."""
        if not self._policy.restricts:
            return catalog, {}
        denied = {r.qualified_name: r for r in catalog.records if self._policy.denies(r)}
        if not denied:
            return catalog, {}
        return _without(catalog, denied), denied

    def _build(
        self,
        catalog: Catalog,
        generation: int,
        denied: Mapping[str, ToolRecord],
        dense: bool = True,
    ) -> Snapshot:
        from router.retrieval.retriever import Retriever

        catalog, ui_uris = with_app_uris(catalog, denied.values())
        held = self.pinning.hold(catalog.records)  # the pin store: blocking
        if held:  # cut after naming, as denied tools are: holding one renames none
            catalog = _without(catalog, held)
        retriever, stats = Retriever.build(
            catalog,
            self._embedder if dense else None,
            store=self.store,
            ranking=self._ranking,
        )
        if stats.embedded:
            logger.info("embedded %d new tools (%d from cache)", stats.embedded, stats.from_cache)
        for collision in catalog.collisions:
            logger.warning(
                "tool names collide as %s: %s",
                collision.sanitised,
                ", ".join(f"{s}/{t} -> {q}" for s, t, q in collision.members),
            )
        # A clash is the config's mistake, reported once, when it appears (the tool stays
        # reachable under its qualified name meanwhile).
        known = set(self._snapshot.catalog.clashes)
        for clash in catalog.clashes:
            if clash not in known:
                logger.error("%s", clash.describe())
        records = catalog.records
        hidden = frozenset(i for i, r in enumerate(records) if app_only(r.ui))
        pinned = tuple(r for r in resolve_pins(catalog, self._pins) if not app_only(r.ui))
        names = NameMatcher.of(records)
        snapshot = Snapshot(
            catalog,
            retriever,
            pinned,
            generation,
            denied,
            _flagged(catalog),
            held,
            names,
            hidden,
            ui_uris,
        )
        release_free_memory()  # embedding and indexing leave freed pages behind
        return snapshot


def _without(catalog: Catalog, names: Mapping[str, object]) -> Catalog:
    kept = tuple(r for r in catalog.records if r.qualified_name not in names)
    return Catalog(kept, catalog.collisions, catalog.clashes)


def _flagged(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """The injection heuristics over the catalog, at indexing (in the rebuild's thread)."""
    from router.policy.injection import scan_tools

    own: dict[str, set[str]] = {}
    by_server: dict[str, set[str]] = {}
    for flag in scan_tools(catalog.records):
        if flag.qualified_name is None:
            by_server.setdefault(flag.server, set()).add(flag.rule)
        else:
            own.setdefault(flag.qualified_name, set()).add(flag.rule)
    flagged = {}
    for record in catalog.records:
        rules = own.get(record.qualified_name, set()) | by_server.get(record.server, set())
        if rules:
            flagged[record.qualified_name] = tuple(sorted(rules))
    return flagged
