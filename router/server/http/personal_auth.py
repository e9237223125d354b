"""`GET /v1/auth` and `DELETE /v1/auth/{server}`: each principal's own sign-ins to the
per-user upstreams (`oauth.perUser`, `grant: token-exchange`), and their revocation;
`GET /v1/secrets` and `DELETE /v1/secrets/{server}`: the same for its own values of servers
with `${user:NAME}` (names and when stored, never a value).

The caller sees its own standing with each per-user upstream its profile may see, and may
sign itself out of one. An operator names another principal with `?principal=SUB` (and
`&issuer=URL`, by default the front's issuer) to read or revoke that principal's. Revoking
deletes the principal's sealed record (on every replica of a shared store, which notice at
the principal's next request) and closes its connection here. No token value is ever in an
answer; a revocation is on the audit trail (`revoked`). A sign-in's tokens are revoked at the
upstream's authorization server first where its metadata names a `revocation_endpoint`
(RFC 7009, best effort; `upstream_revocation` on the trail says how it went).
"""

from __future__ import annotations

import time
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from router.config.personal import user_value_names
from router.core.errors import AuditUnavailable, HttpRefusal
from router.policy.profiles import Principal
from router.server.access.authorization import Access, current_access
from router.server.calls.audit import write
from router.server.http.front import front_of
from router.server.http.rest_models import REFUSALS
from router.server.lifecycle.state import RouterState
from router.upstream.auth.revocation import Revocation
from router.upstream.personal.accounts import PersonalAccounts, Standing
from router.upstream.personal.upstream import PersonalUpstream

personal_api = APIRouter(responses=REFUSALS)


class UpstreamStanding(BaseModel):
    """One principal's standing with one per-user upstream (never a token)."""

    server: str
    how: str = Field(description="`per-user sign-in` (OAuth) or `token exchange` (RFC 8693)")
    signed_in: bool = Field(description="its next request goes out without a sign-in")
    expires_in: int | None = Field(
        default=None, description="seconds the access token has left; negative: expired"
    )
    refreshable: bool | None = None
    scopes: str | None = None


class AuthResponse(BaseModel):
    principal: str = Field(description="the subject whose standing this is")
    issuer: str | None = None
    upstreams: list[UpstreamStanding]


class RevokeResponse(BaseModel):
    server: str
    principal: str
    revoked: bool = Field(description="whether credentials were stored for the principal")
    closed: bool = Field(description="whether this replica had its connection open")


def _whose(
    access: Access, accounts: PersonalAccounts, subject: str | None, issuer: str | None
) -> Principal:
    """The principal asked about: the caller, or (an operator's question) another."""
    if subject is None:
        if access.principal is None:
            raise HttpRefusal(
                400,
                "per-user sign-ins belong to principals at the front (router.http.oauth); "
                "this request has none: an operator names one with ?principal=SUB",
            )
        return access.principal
    if not access.operator:
        raise HttpRefusal(403, "another principal's sign-ins need an operator (router.operators)")
    return Principal(subject, issuer=issuer or accounts.issuer)


def _standing(standing: Standing) -> UpstreamStanding:
    stored = standing.stored
    expires = None if stored is None or stored.expires_at is None else stored.expires_at
    return UpstreamStanding(
        server=standing.server,
        how=standing.how,
        signed_in=standing.signed_in,
        expires_in=None if expires is None else int(expires - time.time()),
        refreshable=None if stored is None else stored.has_refresh,
        scopes=None if stored is None else stored.scope,
    )


def _visible(accounts: PersonalAccounts, access: Access) -> list[str]:
    return [name for name in accounts.servers if access.sees_server(name)]


@personal_api.get("/v1/auth", response_model=AuthResponse, summary="Per-user sign-ins")
async def auth_status(
    request: Request,
    principal: Annotated[str | None, Query(description="an operator's: another's sub")] = None,
    issuer: Annotated[str | None, Query(description="with principal: its issuer")] = None,
) -> AuthResponse:
    """The caller's own standing with each per-user upstream it may see (an operator's
    `?principal=` reads another principal's)."""
    state: RouterState = front_of(request)["router"]
    access = current_access()
    accounts = state.pool.accounts()
    whose = _whose(access, accounts, principal, issuer)

    def read() -> list[UpstreamStanding]:
        return [_standing(accounts.standing(n, whose.key)) for n in _visible(accounts, access)]

    found = await anyio.to_thread.run_sync(read)
    return AuthResponse(principal=whose.subject, issuer=whose.issuer, upstreams=found)


@personal_api.delete(
    "/v1/auth/{server}", response_model=RevokeResponse, summary="Revoke a per-user sign-in"
)
async def revoke(
    server: str,
    request: Request,
    principal: Annotated[str | None, Query(description="an operator's: another's sub")] = None,
    issuer: Annotated[str | None, Query(description="with principal: its issuer")] = None,
) -> RevokeResponse:
    """Sign the caller (an operator's `?principal=`: another principal) out of one
    per-user upstream: its credentials forgotten on every replica, its connection closed."""
    state: RouterState = front_of(request)["router"]
    access = current_access()
    accounts = state.pool.accounts()
    whose = _whose(access, accounts, principal, issuer)
    if server not in _visible(accounts, access):
        raise HttpRefusal(404, f"no per-user upstream named {server!r}")

    def forget() -> tuple[Revocation | None, bool]:  # at the authorization server, then here
        return accounts.revoke_at_server(server, whose.key), accounts.revoke(server, whose.key)

    at_server, revoked = await anyio.to_thread.run_sync(forget)
    upstream = state.pool.upstreams.get(server)
    closed = isinstance(upstream, PersonalUpstream) and upstream.forget(whose.key)
    if state.audit is not None:
        record = {
            "kind": "sign-in",
            "principal": {"sub": whose.subject, "iss": whose.issuer},
            "by": None if access.principal is None else {"sub": access.principal.subject},
            "server": server,
            "outcome": "revoked",
        }
        if at_server is not None:
            record["upstream_revocation"] = at_server.outcome
        try:
            await write(state.audit, record)
        except AuditUnavailable as exc:
            raise HttpRefusal(503, f"revoked, but the audit trail failed: {exc}") from exc
    return RevokeResponse(server=server, principal=whose.subject, revoked=revoked, closed=closed)


class KeysStanding(BaseModel):
    """One principal's values for one server with `${user:NAME}` (never a value)."""

    server: str
    names: list[str] = Field(description="the names of the values stored")
    missing: list[str] = Field(description="the names still to enter")
    set_at: float | None = Field(default=None, description="when last stored (Unix time)")


class SecretsResponse(BaseModel):
    principal: str = Field(description="the subject whose values these are")
    issuer: str | None = None
    servers: list[KeysStanding]


def _keyed(accounts: PersonalAccounts, access: Access) -> list[str]:
    return [name for name in accounts.keyed if access.sees_server(name)]


@personal_api.get("/v1/secrets", response_model=SecretsResponse, summary="Per-user values")
async def secrets_status(
    request: Request,
    principal: Annotated[str | None, Query(description="an operator's: another's sub")] = None,
    issuer: Annotated[str | None, Query(description="with principal: its issuer")] = None,
) -> SecretsResponse:
    """The names and times of the caller's own values for each server with per-user values
    it may see (an operator's `?principal=` reads another principal's); never a value."""
    state: RouterState = front_of(request)["router"]
    access = current_access()
    accounts = state.pool.accounts()
    whose = _whose(access, accounts, principal, issuer)

    def read() -> list[KeysStanding]:
        keys, found = accounts.user_keys(), []
        for name in _keyed(accounts, access):
            server = accounts.keyed[name]
            entered = keys.describe(name, server, whose.key)
            have = list(entered.names) if entered is not None else []
            missing = [n for n in user_value_names(server) if n not in have]
            set_at = entered.set_at if entered is not None else None
            found.append(KeysStanding(server=name, names=have, missing=missing, set_at=set_at))
        return found

    found = await anyio.to_thread.run_sync(read)
    return SecretsResponse(principal=whose.subject, issuer=whose.issuer, servers=found)


@personal_api.delete(
    "/v1/secrets/{server}", response_model=RevokeResponse, summary="Revoke per-user values"
)
async def secrets_revoke(
    server: str,
    request: Request,
    principal: Annotated[str | None, Query(description="an operator's: another's sub")] = None,
    issuer: Annotated[str | None, Query(description="with principal: its issuer")] = None,
) -> RevokeResponse:
    """Forget the caller's own values for one server (an operator's `?principal=`:
    another's), on every replica; its connection here closes."""
    state: RouterState = front_of(request)["router"]
    access = current_access()
    accounts = state.pool.accounts()
    whose = _whose(access, accounts, principal, issuer)
    if server not in _keyed(accounts, access):
        raise HttpRefusal(404, f"no server with per-user values named {server!r}")
    revoked = await anyio.to_thread.run_sync(accounts.user_keys().revoke, server, whose.key)
    upstream = state.pool.upstreams.get(server)
    closed = isinstance(upstream, PersonalUpstream) and upstream.forget(whose.key)
    if state.audit is not None:
        record = {
            "kind": "key-entry",
            "principal": {"sub": whose.subject, "iss": whose.issuer},
            "by": None if access.principal is None else {"sub": access.principal.subject},
            "server": server,
            "outcome": "revoked",
            "via": "rest",
        }
        try:
            await write(state.audit, record)
        except AuditUnavailable as exc:
            raise HttpRefusal(503, f"revoked, but the audit trail failed: {exc}") from exc
    return RevokeResponse(server=server, principal=whose.subject, revoked=revoked, closed=closed)
