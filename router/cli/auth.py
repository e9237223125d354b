"""`mcp-router auth login|status|logout`: sign in to OAuth-protected upstreams.

`login SERVER` connects to the upstream once as the router would; when the server asks for
authorization, the browser opens at its sign-in page (`BROWSER` picks the program;
`--no-browser` prints the URL), the redirect comes back to `http://127.0.0.1:PORT/callback`
(`oauth.callbackPort`, else the port the client was registered with, else a free one), and the
tokens are stored under `cache_dir/auth/` (0600), or with `router.store` in the shared store,
where every replica reads them. A serving router reads them at its next attempt; a restart
reuses them. `status` shows what is stored for each remote upstream, never
a token; `logout SERVER` forgets it. A per-user upstream (`oauth.perUser`) has a sign-in per
principal at the front: `status --principal SUB` shows one principal's, and `revoke SERVER
--principal SUB` forgets it (every replica asks that principal to sign in again), revoking
its tokens at the authorization server first where that server offers it (RFC 7009).

`mcp-router secrets set|status|revoke SERVER --principal SUB` is an operator's hand on each
principal's own values for a server's `${user:NAME}` placeholders
(`router/config/personal.py`).

`set` reads the value from standard input (a prompt that does not echo on a terminal),
never from the arguments: a command line is visible to every user of the machine and kept
in shell histories. Values are sealed with `router.secrets_key` in `router.store` where one
is named (every replica reads them), else in the cache folder. `status` names what is
stored and when, never a value; `revoke` forgets it, and every serving replica closes that
principal's connection at its next request.

With `router.audit`, each change (`secrets set|revoke`, `auth revoke`) is a line of the trail
(`via: cli`, `by` the login name; never a value), chained beside a serving router's through
the trail's lock; one the trail cannot take is made, said and exits 1.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from router.config import RemoteServer, RouterConfig, StdioServer, load_config
from router.config.personal import user_value_names
from router.core.errors import ConfigError

if TYPE_CHECKING:
    from router.store.records import Records
    from router.upstream.auth.storage import StoredCredentials
    from router.upstream.personal.accounts import PersonalAccounts
    from router.upstream.personal.keys import UserKeys


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("auth", help="sign in to OAuth-protected remote upstreams")
    actions = parser.add_subparsers(dest="auth_command", required=True, metavar="ACTION")
    login = actions.add_parser("login", help="sign in to one upstream (opens a browser)")
    login.add_argument("server", help="the upstream's name in the config")
    login.add_argument("--config", type=Path, required=True, help="mcpServers config")
    login.add_argument(
        "--no-browser", action="store_true", help="print the sign-in URL instead of opening it"
    )
    login.add_argument(
        "--fresh", action="store_true", help="sign in again even with valid stored tokens"
    )
    login.set_defaults(handler=run_login)
    status = actions.add_parser("status", help="what is stored for each remote upstream")
    status.add_argument("--config", type=Path, required=True, help="mcpServers config")
    _principal_options(status, required=False)
    status.set_defaults(handler=run_status)
    logout = actions.add_parser("logout", help="forget one upstream's tokens")
    logout.add_argument("server", help="the upstream's name in the config")
    logout.add_argument("--config", type=Path, required=True, help="mcpServers config")
    logout.set_defaults(handler=run_logout)
    revoke = actions.add_parser(
        "revoke", help="forget one principal's sign-in to a per-user upstream"
    )
    revoke.add_argument("server", help="the per-user upstream's name in the config")
    revoke.add_argument("--config", type=Path, required=True, help="mcpServers config")
    _principal_options(revoke, required=True)
    revoke.set_defaults(handler=run_revoke)


def _principal_options(parser: Any, *, required: bool) -> None:
    parser.add_argument(
        "--principal",
        metavar="SUB",
        required=required,
        help="a principal at the front (its token's sub): its own per-user sign-ins",
    )
    parser.add_argument(
        "--issuer", metavar="URL", help="with --principal: its issuer (default: the front's)"
    )


def _cache_dir(config: RouterConfig) -> Path:
    from router.embedding.cache import default_cache_dir

    return config.router.cache_dir or default_cache_dir()


@contextmanager
def _credentials(config: RouterConfig) -> Iterator[Records | None]:
    """The shared store's records where `router.store` names one (connected for this
    command), else None: the cache folder's files."""
    if config.router.store is None:
        yield None
        return
    from router.store.opening import open_store

    store = open_store(config)
    try:
        yield store.records()
    finally:
        store.close()


def _remote(config: RouterConfig, name: str, file: Path) -> RemoteServer:
    server = config.servers.get(name)
    if server is None:
        known = ", ".join(sorted(config.servers)) or "none"
        raise ConfigError(f"{file}: no server named {name!r} (servers: {known})")
    if not isinstance(server, RemoteServer):
        raise ConfigError(f"{file}: {name} is a stdio server; only remote servers sign in")
    return server


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_login(args: argparse.Namespace) -> int:
    from router.upstream.auth.login import sign_in

    config = load_config(args.config)
    server = _remote(config, args.server, args.config)
    with _credentials(config) as records:
        stored = anyio.run(
            lambda: sign_in(
                args.server,
                server,
                _cache_dir(config),
                open_browser=not args.no_browser,
                show=_say,
                connect_timeout=config.timeouts_for(args.server).connect,
                fresh=args.fresh,
                records=records,
            )
        )
    if stored is None or not stored.has_access:
        print(f"{args.server}: connected; the server asked for no sign-in")
        return 0
    print(f"{args.server}: signed in ({_describe(stored)})")
    return 0


def run_status(args: argparse.Namespace) -> int:
    from router.config.oauth import may_carry_tokens
    from router.upstream.auth.providers import (
        has_static_authorization,
        token_files,
    )
    from router.upstream.personal.accounts import PersonalAccounts

    config = load_config(args.config)
    cache_dir = _cache_dir(config)
    remote = {n: s for n, s in config.servers.items() if isinstance(s, RemoteServer)}
    if not remote:
        print("no remote upstreams in the config")
    with _credentials(config) as records:
        accounts = PersonalAccounts(config, records)
        for name, server in sorted(remote.items()):
            if name in accounts.servers:
                state = _personal_state(accounts, name, args)
            elif has_static_authorization(server):
                state = "static Authorization header (no sign-in)"
            elif not may_carry_tokens(server.url):
                state = "plain http beyond this machine: tokens are never sent"
            else:
                stored = token_files(cache_dir, server, records).describe()
                if stored is None or not stored.has_access:
                    state = f"sign-in needed: mcp-router auth login {name} --config {args.config}"
                else:
                    state = f"signed in ({_describe(stored)})"
            print(f"{name}: {state}")
    return 0


def _owner(accounts: PersonalAccounts, args: argparse.Namespace) -> str:
    from router.policy.profiles import Principal

    return Principal(args.principal, issuer=args.issuer or accounts.issuer).key


def _personal_state(accounts: PersonalAccounts, name: str, args: argparse.Namespace) -> str:
    if args.principal is None:
        how = accounts.standing(name, "").how
        return f"{how}: each principal signs in as itself (--principal SUB shows one's)"
    standing = accounts.standing(name, _owner(accounts, args))
    if standing.how == "token exchange":
        return f"token exchange: {args.principal}'s own front token is traded (no sign-in)"
    if standing.stored is None or not standing.signed_in:
        return f"{args.principal}: not signed in (asked at its first call, in its host)"
    return f"{args.principal}: signed in ({_describe(standing.stored)})"


def run_revoke(args: argparse.Namespace) -> int:
    from router.upstream.personal.accounts import PersonalAccounts

    config = load_config(args.config)
    _remote(config, args.server, args.config)
    with _credentials(config) as records:
        accounts = PersonalAccounts(config, records)
        if args.server not in accounts.servers:
            raise ConfigError(
                f"{args.config}: mcpServers.{args.server}.oauth is not per-user (perUser or "
                f"token-exchange); for its one shared sign-in use `mcp-router auth logout`"
            )
        upstream = accounts.revoke_at_server(args.server, _owner(accounts, args))
        forgot = accounts.revoke(args.server, _owner(accounts, args))
    said = "revoked" if forgot else "nothing was stored"
    print(f"{args.server}: {args.principal}: {said} (asked to sign in again at its next call)")
    record = {"kind": "sign-in", "server": args.server, "outcome": "revoked"}
    if upstream is not None:
        record["upstream_revocation"] = upstream.outcome
        why = f" ({upstream.detail})" if upstream.detail else ""
        print(f"{args.server}: at the authorization server: {upstream.outcome}{why}")
    return _noted(config, args, record)


def _noted(config: RouterConfig, args: argparse.Namespace, record: dict[str, Any]) -> int:
    """An operator's change on the audit trail, if any: 0, or 1 when it was not taken."""
    section = config.router.audit
    if section is None:
        return 0
    from router.core.errors import AuditUnavailable
    from router.server.calls.audit import trail_for

    by = os.environ.get("USER") or os.environ.get("LOGNAME") or f"uid {os.getuid()}"
    who = {"sub": args.principal, "iss": _issuer(config, args)}
    trail = trail_for(config)
    try:
        assert trail is not None
        trail.append({**record, "principal": who, "by": {"user": by}, "via": "cli"})
    except AuditUnavailable as exc:
        _say(f"error: done, but the audit trail at {section.path} did not record it: {exc}")
        return 1
    finally:
        if section.otel:
            from router.audit.export import stop

            stop()  # its records go out before the command ends
    return 0


def run_logout(args: argparse.Namespace) -> int:
    from router.upstream.auth.providers import token_files

    config = load_config(args.config)
    server = _remote(config, args.server, args.config)
    with _credentials(config) as records:
        forgot = anyio.run(token_files(_cache_dir(config), server, records).clear)
    print(f"{args.server}: {'signed out' if forgot else 'nothing was stored'}")
    return 0


def _describe(stored: StoredCredentials) -> str:
    parts = [f"issuer {stored.issuer or 'unknown'}"]
    parts.append(f"scopes {stored.scope}" if stored.scope else "no scopes")
    if stored.expires_at is not None:
        left = stored.expires_at - time.time()
        parts.append(f"expires in {int(left)} s" if left > 0 else "expired")
    parts.append("refreshable" if stored.has_refresh else "no refresh token")
    return ", ".join(parts)


def register_secrets(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "secrets", help="each principal's own keys for servers with ${user:NAME} values"
    )
    actions = parser.add_subparsers(dest="secrets_command", required=True, metavar="ACTION")
    put = actions.add_parser("set", help="store a principal's value (read from stdin)")
    put.add_argument("server", help="the server's name in the config")
    put.add_argument(
        "--name", help="which ${user:NAME} (default: the server's only one)", metavar="NAME"
    )
    status = actions.add_parser("status", help="which values a principal has stored, and when")
    status.add_argument("server", nargs="?", help="one server (default: every one with values)")
    revoke = actions.add_parser("revoke", help="forget a principal's values for one server")
    revoke.add_argument("server", help="the server's name in the config")
    for action, handler in (
        (put, run_secrets_set),
        (status, run_secrets_status),
        (revoke, run_secrets_revoke),
    ):
        action.add_argument("--config", type=Path, required=True, help="mcpServers config")
        action.add_argument(
            "--principal", metavar="SUB", required=True, help="the principal (its token's sub)"
        )
        action.add_argument(
            "--issuer", metavar="URL", help="the principal's issuer (default: the front's)"
        )
        action.set_defaults(handler=handler)


def _keyed(config: RouterConfig, name: str, file: Path) -> StdioServer | RemoteServer:
    server = config.servers.get(name)
    if server is None:
        known = ", ".join(sorted(config.servers)) or "none"
        raise ConfigError(f"{file}: no server named {name!r} (servers: {known})")
    if not user_value_names(server):
        raise ConfigError(
            f"{file}: mcpServers.{name} takes no per-user values. Fix: put ${{user:NAME}} "
            "in its env (a local server) or headers (a remote one)."
        )
    return server


def _issuer(config: RouterConfig, args: argparse.Namespace) -> str | None:
    oauth = config.router.http.oauth
    return args.issuer or (oauth.issuer if oauth is not None else None)


def _secrets_owner(config: RouterConfig, args: argparse.Namespace) -> str:
    from router.policy.profiles import Principal

    return Principal(args.principal, issuer=_issuer(config, args)).key


def _keys(config: RouterConfig, records: Any) -> UserKeys:
    from router.upstream.personal.credentials import sealed_records
    from router.upstream.personal.keys import UserKeys

    return UserKeys(sealed_records(config, records))


def _read_value(name: str) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"{name} (not echoed): ")
    return sys.stdin.readline().rstrip("\r\n")


def run_secrets_set(args: argparse.Namespace) -> int:
    from router.upstream.personal.keys import BadValue

    config = load_config(args.config)
    server = _keyed(config, args.server, args.config)
    names = user_value_names(server)
    name = args.name or (names[0] if len(names) == 1 else None)
    if name is None or name not in names:
        raise ConfigError(
            f"{args.config}: mcpServers.{args.server} takes {', '.join(names)}: "
            "name one with --name"
        )
    value = _read_value(name)
    with _credentials(config) as records:
        try:
            _keys(config, records).set(
                args.server, server, _secrets_owner(config, args), {name: value}
            )
        except BadValue as exc:
            raise ConfigError(f"{args.server}: {exc}; nothing was stored") from None
    print(f"{args.server}: {name} stored for {args.principal}")
    return _noted(config, args, {"kind": "key-entry", "server": args.server, "outcome": "entered"})


def run_secrets_status(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if args.server is not None:
        servers = {args.server: _keyed(config, args.server, args.config)}
    else:
        servers = {n: s for n, s in sorted(config.servers.items()) if user_value_names(s)}
    if not servers:
        print("no server in the config takes per-user values")
    owner = _secrets_owner(config, args)
    with _credentials(config) as records:
        keys = _keys(config, records)
        for name, server in servers.items():
            entered = keys.describe(name, server, owner)
            wanted = user_value_names(server)
            have = entered.names if entered is not None else ()
            missing = [n for n in wanted if n not in have]
            when = ""
            if entered is not None:
                when = time.strftime(" (set %Y-%m-%d %H:%M:%S UTC)", time.gmtime(entered.set_at))
            state = "stored" if not missing else f"missing {', '.join(missing)}"
            print(f"{name}: {args.principal}: {state}{when}")
    return 0


def run_secrets_revoke(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    _keyed(config, args.server, args.config)
    with _credentials(config) as records:
        forgot = _keys(config, records).revoke(args.server, _secrets_owner(config, args))
    said = "revoked" if forgot else "nothing was stored"
    print(f"{args.server}: {args.principal}: {said} (its connection closes at its next request)")
    return _noted(config, args, {"kind": "key-entry", "server": args.server, "outcome": "revoked"})
