"""Sealed state: what the router hands a client to bring back, bound so it authorizes one thing.

Confirmations, held calls, code runs and pin approvals all give a 2026-07-28 host a
`requestState` to send back with its retry, and an upstream's own task reaches the host under
a sealed task id (`task`, opened without spending its nonce: the host polls it many times).
Each is sealed here, one way:

- an HMAC-SHA256 with a key read from the store (`VectorStore.shared_secret`), so that any
  replica can open what another sealed, or this process's own random key without one;
- the **purpose** (`confirm`, `held`, `code`, `pin`, `task`): a state sealed for one never
  opens as another;
- the **principal** (`Principal.key`, "" without identities) and, on handshake revisions,
  the **session**: another caller's retry opens nothing;
- the **digest** of what it authorizes (the tool and its arguments, or the program): a retry
  for another tool or other arguments is refused;
- an **expiry**, and a **nonce** claimed once in a `NonceLedger` (the shared store's table,
  so a nonce is used once across every replica; a file on one machine; memory for one
  process). A ledger that cannot be reached refuses the state ("unavailable"): it fails
  closed, never letting a state through unspent. The memory ledger is bounded, in all and
  per principal (`MemoryNonces`): a principal that spent its share is refused ("share")
  until its states expire, and the others are served.

`Sealer.open` checks everything but the nonce and says which check failed (`Refused`);
`Sealer.claim` spends the nonce; `open_once` does both. Payloads are JSON and readable by
the client (base64 is not encryption): put nothing secret in one.

Work paused at a question (a held call, a code run: `Paused`) is sealed and reopened by
`Pauses`, one per kind and process: a state names the paused work, which of its questions it
answers and the process that holds it, since only that process can resume it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

import anyio.to_thread

from router.core.errors import InvalidParams

Purpose = Literal["confirm", "held", "code", "pin", "task"]
Why = Literal[
    "forged",
    "purpose",
    "principal",
    "session",
    "digest",
    "expired",
    "used",
    "unavailable",
    "share",
    "full",
]
"""Why a state was refused: not ours (or tampered), sealed for another purpose, principal,
session, or call, past its expiry, its nonce spent already, the ledger unreachable, or the
ledger holding as many unexpired nonces as it may for this principal, or in all."""
_PURPOSES: tuple[Purpose, ...] = ("confirm", "held", "code", "pin", "task")
PREFIX = "mcp-router.s1."
logger = logging.getLogger(__name__)
MAX_MEMORY_NONCES = 10_000
"""Nonces one process remembers as used (until their state expires) without a store."""
NONCE_SHARE = 4
"""With identities, one principal may hold 1/NONCE_SHARE of `MAX_MEMORY_NONCES` (2,500: a
state lives minutes, so eight confirmed calls or answered questions a second): no fewer than
four principals fill the ledger, as with held calls (`held_calls.PRINCIPAL_SHARE`)."""


@dataclass(frozen=True, slots=True)
class Binding:
    """Who and what a state is for; every field must match when it comes back."""

    purpose: Purpose
    principal: str = ""
    """`Principal.key`, or "" for a request without identities."""
    session: str | None = None
    """The handshake session's id; None on 2026-07-28 (sessionless)."""
    digest: str = ""
    """`digest(...)` of what the state authorizes."""


@dataclass(frozen=True, slots=True)
class Opened:
    """A state that passed every check but its nonce."""

    binding: Binding
    data: Mapping[str, Any]
    nonce: str
    expires: float


@dataclass(frozen=True, slots=True)
class Refused:
    why: Why

    def describe(self) -> str:
        return _REASONS[self.why]


_REASONS: dict[Why, str] = {
    "forged": "the request state is not one this router sealed",
    "purpose": "the request state was issued for another kind of question",
    "principal": "the request state was issued to another principal",
    "session": "the request state was issued in another session",
    "digest": "the request state was issued for another call (another tool, other arguments "
    "or another program)",
    "expired": "the request state has expired",
    "used": "the request state was used already",
    "unavailable": "the router cannot make sure the request state is used only once now (the "
    "store that records used states is unreachable)",
    "share": "this principal has used as many request states as the router records for one "
    "principal at a time; try again once they expire, within minutes",
    "full": "the router records as many used request states as it can hold; try again once "
    "they expire, within minutes",
}


class LedgerFull(Exception):
    """A bounded ledger cannot record one more nonce now: for this principal (`share`), or
    for anyone. Not recording it refuses the state (fail closed)."""

    def __init__(self, share: bool) -> None:
        super().__init__("principal's share" if share else "full")
        self.share = share


class NonceLedger(Protocol):
    """Where nonces are spent: `claim` is True for the first claim of a nonce only, across
    everything that shares the ledger (blocking: it may be a database). `owner` is the
    `Principal.key` the state was sealed to ("" without identities); a bounded ledger raises
    `LedgerFull` rather than forget a nonce still unexpired."""

    def claim(self, nonce: str, expires: float, owner: str = "") -> bool: ...


class MemoryNonces:
    """One process's ledger, bounded: `limit` nonces in all, and `limit // NONCE_SHARE` for
    one principal with identities (owner "" is every caller of a router without them), so
    that one principal spending states fast cannot refuse everyone's. Full means refused
    (`LedgerFull`, fail closed): a nonce is never forgotten before its state expires, since
    that state would then open again."""

    def __init__(self, limit: int | None = None, clock: Callable[[], float] = time.time) -> None:
        self._limit = MAX_MEMORY_NONCES if limit is None else limit
        self._share = max(1, self._limit // NONCE_SHARE)
        self._clock = clock
        self._used: dict[str, dict[str, float]] = {}
        """Each owner's spent nonces, and when each one's state expires."""
        self._count = 0
        self._lock = threading.Lock()

    def claim(self, nonce: str, expires: float, owner: str = "") -> bool:
        with self._lock:
            mine = self._used.get(owner, {})
            if nonce in mine:
                return False  # its state has not expired: open() refuses expired ones
            if owner and len(mine) >= self._share:
                self._prune([owner])
                if len(self._used.get(owner, {})) >= self._share:
                    raise LedgerFull(share=True)
            if self._count >= self._limit:
                self._prune(list(self._used))
                if self._count >= self._limit:
                    raise LedgerFull(share=False)
            self._used.setdefault(owner, {})[nonce] = expires
            self._count += 1
            return True

    def _prune(self, owners: list[str]) -> None:
        """Forget the expired nonces of `owners` (only at a bound: a scan of what it bounds)."""
        now = self._clock()
        for owner in owners:
            used = self._used[owner]
            for nonce in [n for n, until in used.items() if until < now]:
                del used[nonce]
                self._count -= 1
            if not used:
                del self._used[owner]


def digest(*parts: Any) -> str:
    """The sha256 of the canonical JSON of `parts` (a tool's server, name and arguments)."""
    canonical = json.dumps(list(parts), sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class Sealer:
    """Seals and opens states under one key; one per router process."""

    key: bytes | None = None
    ledger: NonceLedger = field(default_factory=MemoryNonces)
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self._key = self.key or secrets.token_bytes(32)

    @staticmethod
    def is_sealed(state: str | None) -> bool:
        return state is not None and state.startswith(PREFIX)

    def seal(self, binding: Binding, seconds: float, data: Mapping[str, Any] | None = None) -> str:
        body = {
            "p": binding.purpose,
            "who": binding.principal,
            "s": binding.session,
            "d": binding.digest,
            "n": secrets.token_urlsafe(16),
            "exp": self.clock() + seconds,
            "data": dict(data or {}),
        }
        encoded = base64.urlsafe_b64encode(json.dumps(body).encode()).decode()
        return f"{PREFIX}{encoded}.{self._mac(encoded)}"

    def purpose_of(self, state: str | None) -> Purpose | None:
        """The purpose of a genuine state of ours, without checking anything else."""
        body = self._body(state)
        purpose = body.get("p") if body else None
        for known in _PURPOSES:
            if purpose == known:
                return known
        return None

    def open(self, state: str | None, expected: Binding) -> Opened | Refused:
        """The state, if it is ours, unexpired and bound to `expected` in every field."""
        body = self._body(state)
        if body is None:
            return Refused("forged")
        checks: tuple[tuple[Why, Any, Any], ...] = (
            ("purpose", body.get("p"), expected.purpose),
            ("principal", body.get("who"), expected.principal),
            ("session", body.get("s"), expected.session),
            ("digest", body.get("d"), expected.digest),
        )
        for why, found, wanted in checks:
            if not _same(found, wanted):
                return Refused(why)
        expires, nonce, data = body.get("exp"), body.get("n"), body.get("data")
        if not isinstance(expires, int | float) or not isinstance(nonce, str):
            return Refused("forged")
        if expires < self.clock():
            return Refused("expired")
        return Opened(expected, data if isinstance(data, dict) else {}, nonce, float(expires))

    async def claim(self, opened: Opened) -> bool:
        """Spend the state's nonce (once across the ledger); False if it was spent, or
        the ledger cannot say."""
        return await self.spend(opened) is None

    async def spend(self, opened: Opened) -> Refused | None:
        """Spend the state's nonce: None the first time, else why not ("used"; "share" or
        "full" when a bounded ledger has no room; "unavailable" when the ledger fails: fail
        closed)."""
        owner = opened.binding.principal
        try:
            first = await anyio.to_thread.run_sync(
                self.ledger.claim, opened.nonce, opened.expires, owner
            )
        except LedgerFull as full:
            logger.warning("sealed state refused: the nonce ledger is %s", full)
            return Refused("share" if full.share else "full")
        except Exception as exc:  # the ledger's store: sqlite3, OSError, StoreError
            logger.warning("sealed state refused: its nonce cannot be recorded (%s)", exc)
            return Refused("unavailable")
        return None if first else Refused("used")

    async def open_once(self, state: str | None, expected: Binding) -> Opened | Refused:
        """`open`, then `spend`: a state that authorizes one thing, once."""
        opened = self.open(state, expected)
        if isinstance(opened, Refused):
            return opened
        return await self.spend(opened) or opened

    def _mac(self, encoded: str) -> str:
        return hmac.new(self._key, encoded.encode(), hashlib.sha256).hexdigest()

    def _body(self, state: str | None) -> dict[str, Any] | None:
        if not self.is_sealed(state):
            return None
        assert state is not None
        encoded, _, mac = state[len(PREFIX) :].rpartition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(encoded).encode()):
            return None
        try:
            body = json.loads(base64.urlsafe_b64decode(encoded.encode()))
        except ValueError:
            return None
        return body if isinstance(body, dict) else None


def _same(found: Any, wanted: Any) -> bool:
    if wanted is None or found is None:
        return found is None and wanted is None
    return (
        isinstance(found, str)
        and isinstance(wanted, str)
        and hmac.compare_digest(found.encode(), wanted.encode())
    )


class Paused(Protocol):
    """Work paused at a question until a 2026-07-28 host's retry answers it."""

    @property
    def id(self) -> str: ...

    @property
    def binding(self) -> Binding:
        """Whom and what its states are for: the retry must bring the same."""
        ...

    @property
    def pending(self) -> object | None:
        """The question waiting for its answer; None while none waits."""
        ...

    @property
    def generation(self) -> int:
        """Which question the next state answers (a retry answers each once)."""
        ...


P = TypeVar("P", bound=Paused)


@dataclass(frozen=True, slots=True)
class Pauses(Generic[P]):
    """Seals the states of one kind of paused work and opens their retries; each refusal an
    `InvalidParams` that says why in that kind's words."""

    sealer: Sealer
    paused: Mapping[str, P]
    """The paused work of this process, by id."""
    refused: str
    """Why a state does not open, with `{why}` for `Refused.describe`."""
    elsewhere: str
    """Said when the state was sealed by another process."""
    gone: str
    """Said when the work is no longer paused here, or is another caller's."""
    instance: str = field(default_factory=lambda: secrets.token_urlsafe(9))
    """This process, named in each state: a retry that reaches another replica is told."""

    def seal(self, paused: P, seconds: float) -> str:
        """The state a retry answers `paused`'s current question with."""
        data = {"id": paused.id, "g": paused.generation, "at": self.instance}
        return self.sealer.seal(paused.binding, seconds, data)

    async def open(self, state: str, expected: Binding) -> P:
        """The paused work `state` answers the question of, its nonce spent."""
        opened = self.sealer.open(state, expected)
        if isinstance(opened, Refused):
            raise InvalidParams(self.refused.format(why=opened.describe()))
        if opened.data.get("at") != self.instance:
            raise InvalidParams(self.elsewhere)
        paused = self.paused.get(str(opened.data.get("id")))
        if paused is None or paused.binding != expected:
            raise InvalidParams(self.gone)
        spent = await self.sealer.spend(opened)
        if spent is not None:
            raise InvalidParams(self.refused.format(why=spent.describe()))
        if paused.pending is None or opened.data.get("g") != paused.generation:
            raise InvalidParams("mcp-router: this question was answered already")
        return paused
