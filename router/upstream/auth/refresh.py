"""A token refresh that two replicas (or two connections of one) never do twice.

The SDK's `OAuthClientProvider` refreshes inside its flow: once its access token has expired
and it holds a refresh token, the first request its flow makes is a refresh grant (RFC 6749
section 6: a form POST with `grant_type=refresh_token`) to the token endpoint. An
authorization server that rotates refresh tokens takes each one once, so two replicas that
both spend the token they read refuse each other: one of them would need a person to sign
in again. `SharedRefresh` wraps the provider as an httpx `Auth` (the public seam the SDK's
transports take; nothing of the SDK is replaced) and drives its flow. When the flow makes a
refresh grant, it first takes the credentials record's lock (`TokenFiles.records.locked`:
an advisory lock in the shared store, `flock` on one machine) and re-reads the record:

- an access token other than the one this flow found expired, still valid: another process
  refreshed while this one waited. The flow gets that token as its grant's answer, and no
  request leaves;
- another refresh token (rotated elsewhere, its access token expired again since): the
  grant goes out with that one;
- otherwise the grant goes out as the SDK built it.

The lock is held until the flow has stored what the grant brought (its `set_tokens`, written
through the held lock) and moved on to the request it authenticates, so whoever takes the
lock next reads the new token. Token values are compared, never logged.

It also signs in one connection at a time (`gate`: one per upstream, and per principal for a
per-user upstream). A primary connection and its handshake twin have a provider each, and
both meet the server's 401 at once: the second waits while the first signs in (one prompt,
one loopback listener, one `state` in flight), then retries with the tokens the first
stored (`adopt_tokens`) and signs in itself only if the server refuses those too.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal
from urllib.parse import parse_qsl

import anyio
import anyio.to_thread
import httpx2
from mcp.shared.auth import OAuthToken

from router.sdk.internals import adopt_tokens
from router.store.records import Held
from router.upstream.auth.storage import TokenFiles, expires_at, tokens_of

REUSE_MARGIN = 1.0
"""Seconds a token another process stored must still be valid for to be used instead of
refreshing (one that expires sooner is refreshed)."""


def refresh_token_of(request: httpx2.Request) -> str | None:
    """The refresh token `request` spends, if it is a refresh grant."""
    if request.method != "POST":
        return None
    if "application/x-www-form-urlencoded" not in request.headers.get("content-type", ""):
        return None
    form = dict(parse_qsl(request.content.decode("utf-8", "replace")))
    return form.get("refresh_token") if form.get("grant_type") == "refresh_token" else None


def asks_sign_in(response: httpx2.Response) -> bool:
    """Whether the SDK's flow answers `response` with a sign-in (401, or a step-up 403)."""
    if response.status_code == 401:
        return True
    challenge = response.headers.get("www-authenticate", "")
    return response.status_code == 403 and "insufficient_scope" in challenge


class SharedRefresh(httpx2.Auth):
    """`provider` (one of the SDK's OAuth providers), its refresh grants made under the lock
    of the credentials record in `files`, its sign-ins one at a time under `gate`."""

    def __init__(
        self, provider: httpx2.Auth, files: TokenFiles, gate: anyio.Lock | None = None
    ) -> None:
        """`gate`: shared by every connection that signs in to the same record (None: this
        provider's own)."""
        self._provider = provider
        self._files = files
        self._gate = gate or anyio.Lock()

    def _tokens_in_use(self) -> str | None:
        """The access token the provider holds (the one it found expired)."""
        context = getattr(self._provider, "context", None)
        tokens = getattr(context, "current_tokens", None)
        return getattr(tokens, "access_token", None)

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self._provider.async_auth_flow(request)
        gated = False
        try:
            outgoing = await flow.__anext__()
            while True:
                spent = refresh_token_of(outgoing) if outgoing is not request else None
                if spent is None:
                    if outgoing is request and gated:
                        self._gate.release()  # signed in: the request goes again
                        gated = False
                    response = yield outgoing
                    if outgoing is request and asks_sign_in(response):
                        await self._gate.acquire()
                        gated = True
                        tokens = await self._signed_in_meanwhile(request)
                        if tokens is not None:
                            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
                            response = yield request
                    outgoing = await flow.asend(response)
                    continue
                async with self._locked() as record, _holding(self._files, record):
                    answer, outgoing = await self._decide(outgoing, spent)
                    # Until the flow has stored what the grant brought and goes on to the
                    # request itself (a redirect it follows on the way included).
                    while True:
                        if answer is None:
                            answer = yield outgoing
                        outgoing = await flow.asend(answer)
                        answer = None
                        if outgoing is request:
                            break
        except StopAsyncIteration:
            return
        finally:
            if gated:
                self._gate.release()
            await flow.aclose()

    async def _signed_in_meanwhile(self, request: httpx2.Request) -> OAuthToken | None:
        """The tokens another connection stored since `request` went out (it signed in
        while this one waited), now this provider's too; None: none newer."""
        data = await anyio.to_thread.run_sync(self._files.read)
        tokens = tokens_of(data)
        if tokens is None or not tokens.access_token:
            return None
        if request.headers.get("authorization") == f"Bearer {tokens.access_token}":
            return None
        expiry = expires_at(data)
        if expiry is not None and expiry - time.time() <= REUSE_MARGIN:
            return None
        adopt_tokens(self._provider, tokens)
        return tokens

    async def _decide(
        self, grant: httpx2.Request, spent: str
    ) -> tuple[httpx2.Response | None, httpx2.Request]:
        """What another process stored while this one waited: its fresh token as the
        grant's answer, or the grant to send (with the record's refresh token)."""
        data = await anyio.to_thread.run_sync(self._files.read)
        verdict = _verdict(data, self._tokens_in_use(), spent)
        tokens = tokens_of(data)
        if verdict == "reuse" and tokens is not None:
            body = tokens.model_dump(mode="json", exclude_none=True)
            return httpx2.Response(200, json=body, request=grant), grant
        if verdict == "rotated" and tokens is not None and tokens.refresh_token:
            return None, _with_refresh_token(grant, tokens.refresh_token)
        return None, grant

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[Held]:
        """The record's lock, taken and released in worker threads, whatever is cancelled
        meanwhile (a lock taken and never released would hold every replica up)."""
        manager = self._files.records.locked(self._files.kind, self._files.key)
        with anyio.CancelScope(shield=True):
            record = await anyio.to_thread.run_sync(manager.__enter__)
        try:
            yield record
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(manager.__exit__, None, None, None)


@asynccontextmanager
async def _holding(files: TokenFiles, record: Held) -> AsyncIterator[None]:
    with files.holding(record):
        yield


def _verdict(
    data: dict[str, Any], in_use: str | None, spent: str
) -> Literal["reuse", "rotated", "send"]:
    tokens = tokens_of(data)
    if tokens is None:
        return "send"
    expiry = expires_at(data)
    fresh = expiry is None or expiry - time.time() > REUSE_MARGIN
    if tokens.access_token and tokens.access_token != in_use and fresh:
        return "reuse"
    if tokens.refresh_token and tokens.refresh_token != spent:
        return "rotated"
    return "send"


def _with_refresh_token(grant: httpx2.Request, refresh_token: str) -> httpx2.Request:
    form = [
        (name, refresh_token if name == "refresh_token" else value)
        for name, value in parse_qsl(grant.content.decode("utf-8", "replace"))
    ]
    headers = {
        name: value for name, value in grant.headers.items() if name.lower() != "content-length"
    }
    return httpx2.Request(grant.method, grant.url, data=dict(form), headers=headers)
