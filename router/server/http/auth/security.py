"""Who may talk to the HTTP front: the Host and Origin allow-lists, the bearer token, the
body limit, and the rule that a front reachable beyond loopback needs a token.

Host checks stop DNS rebinding (a web page whose name resolves to 127.0.0.1 reaching the
router through the browser); Origin checks stop other pages' scripts. Clients that are not
browsers send no Origin and pass that check; so does a page the front serves itself (the
playground), whose Origin names the very Host the Host check let in (any scheme: a TLS proxy
may sit in front). Patterns: `name`, `name:port`, `name:*` (any port) and `*` (anything);
origins likewise with their scheme, `http://name:*`.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from router.config import DEFAULT_MAX_BODY_BYTES, HttpSettings
from router.core.errors import ConfigError
from router.server.http.auth.tokens import FrontTokens

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOOPBACK_ORIGINS = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in LOOPBACK_HOSTS
)
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the front on this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def matches(value: str, patterns: Sequence[str]) -> bool:
    """`value` is one of `patterns`, or has the port-wildcard pattern's prefix."""
    for pattern in patterns:
        if pattern in ("*", value):
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]):
            port = value[len(pattern) - 1 :]
            if port.isdigit():
                return True
    return False


@dataclass(frozen=True, slots=True)
class SecurityPolicy:
    """The checks every HTTP request goes through, in this order: Host (421), Origin (403),
    bearer token (401), body size (413)."""

    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    allowed_origins: tuple[str, ...] = LOOPBACK_ORIGINS
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    tokens: FrontTokens | None = None
    """`router.http.oauth`: each request's own access token, instead of the shared one."""
    operator_token: str | None = None
    """`ROUTER_OPERATOR_TOKEN`: accepted at `/metrics` and `/healthz` only, as an operator
    (a scraper's or a health checker's credential, beside identities)."""

    def host_allowed(self, host: str | None) -> bool:
        return host is not None and matches(host.lower(), self.allowed_hosts)

    def origin_allowed(self, origin: str | None, host: str | None = None) -> bool:
        """No Origin, an allowed one, or the same origin: `scheme://host` of this request."""
        if origin is None:
            return True
        origin = origin.lower()
        _, separator, authority = origin.partition("://")
        if separator and host is not None and authority == host.lower():
            return True
        return matches(origin, self.allowed_origins)

    @property
    def guarded(self) -> bool:
        """Whether requests must carry a credential at all."""
        return self.token is not None or self.tokens is not None

    def token_accepted(self, authorization: str | None) -> bool:
        if self.token is None:
            return True
        scheme, _, credential = (authorization or "").partition(" ")
        # Constant time, so the response time does not leak how much of a guess was right.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        )

    def operator_accepted(self, authorization: str | None) -> bool:
        if self.operator_token is None:
            return False
        scheme, _, credential = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credential.strip().encode(), self.operator_token.encode()
        )

    @classmethod
    def for_bind(
        cls,
        settings: HttpSettings,
        host: str,
        token: str | None,
        operator_token: str | None = None,
    ) -> SecurityPolicy:
        """The policy for a front bound to `host`.

        Raises:
            ConfigError: `host` is beyond loopback and there is no token.
        """
        token = token or None
        tokens = FrontTokens(settings.oauth) if settings.oauth is not None else None
        if tokens is not None and token is not None:
            # One identity model: a shared secret beside identities would bypass profiles.
            logger.warning(
                "router.http.oauth is set: the shared token (ROUTER_TOKEN / --token) is "
                "ignored, every request carries its own access token"
            )
            token = None
        if not is_loopback(host) and token is None and tokens is None:
            raise ConfigError(
                f"refusing to serve HTTP on {host} without a token: anyone who can reach it "
                "could call every upstream tool. Fix: set ROUTER_TOKEN (or pass --token), "
                "configure router.http.oauth, or bind to 127.0.0.1."
            )
        hosts = [*LOOPBACK_HOSTS, *(h.lower() for h in settings.allowed_hosts)]
        if host not in _WILDCARD_BINDS and not is_loopback(host):
            hosts += [host.lower(), f"{host.lower()}:*"]
        elif host in _WILDCARD_BINDS and not settings.allowed_hosts:
            # Any name may reach a wildcard bind; the token (required there) guards it.
            logger.warning(
                "bound to all interfaces without router.http.allowed_hosts: Host is not "
                "checked; the bearer token protects the front"
            )
            hosts.append("*")
        return cls(
            allowed_hosts=tuple(hosts),
            allowed_origins=(*LOOPBACK_ORIGINS, *(o.lower() for o in settings.allowed_origins)),
            token=token,
            max_body_bytes=settings.max_body_bytes,
            tokens=tokens,
            operator_token=operator_token or None,
        )
