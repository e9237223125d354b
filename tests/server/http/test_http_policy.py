"""The HTTP front's settings and policy: the `router.http` section, Host/Origin patterns,
the token rule for non-loopback binds, and the upstream settings that HTTP brought."""

from __future__ import annotations

import pytest

from router.config import DEFAULT_MAX_BODY_BYTES, HttpSettings, RemoteServer, parse_config
from router.core.errors import ConfigError
from router.server.http.auth.security import SecurityPolicy, is_loopback, matches


def test_the_http_section_has_safe_defaults_and_takes_allow_lists() -> None:
    default = parse_config({"mcpServers": {}}).router.http
    custom = parse_config(
        {
            "mcpServers": {},
            "router": {
                "http": {
                    "host": "0.0.0.0",
                    "port": 9000,
                    "allowed_hosts": ["router.internal:*"],
                    "allowed_origins": ["https://app.example"],
                    "max_body_bytes": 1024,
                }
            },
        }
    ).router.http

    assert (default.host, default.port, default.max_body_bytes) == (
        "127.0.0.1",
        8765,
        DEFAULT_MAX_BODY_BYTES,
    )
    assert custom.allowed_hosts == ["router.internal:*"] and custom.max_body_bytes == 1024


def test_a_bad_http_setting_names_the_field_and_the_allowed_keys() -> None:
    with pytest.raises(ConfigError) as unknown:
        parse_config({"mcpServers": {}, "router": {"http": {"hots": "x"}}})
    with pytest.raises(ConfigError) as port:
        parse_config({"mcpServers": {}, "router": {"http": {"port": 70000}}})

    assert "router.http.hots: unknown key" in str(unknown.value)
    assert "host, port, allowed_hosts, allowed_origins, max_body_bytes" in str(unknown.value)
    assert "router.http.port" in str(port.value) and "Fix: use a smaller value" in str(port.value)


def test_remote_headers_are_hidden_from_repr_and_ping_has_a_default() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "a": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer S3"}},
                "b": {"url": "https://y.example/sse", "timeouts": {"ping": 2}},
            }
        }
    )

    remote = config.servers["a"]
    assert isinstance(remote, RemoteServer)
    assert "S3" not in repr(config) and "S3" not in str(remote)
    assert remote.headers == {"Authorization": "Bearer S3"}
    assert (config.timeouts_for("a").ping, config.timeouts_for("b").ping) == (15.0, 2.0)


@pytest.mark.parametrize(
    ("value", "patterns", "allowed"),
    [
        ("127.0.0.1:8765", ["127.0.0.1:*"], True),
        ("127.0.0.1", ["127.0.0.1:*"], False),
        ("127.0.0.1:8765x", ["127.0.0.1:*"], False),
        ("127.0.0.1.evil.example:80", ["127.0.0.1:*"], False),
        ("http://localhost:3000", ["http://localhost:*"], True),
        ("https://app.example", ["https://app.example"], True),
        ("https://app.example.evil", ["https://app.example"], False),
        ("anything", ["*"], True),
    ],
)
def test_host_and_origin_patterns(value: str, patterns: list[str], allowed: bool) -> None:
    assert matches(value, patterns) is allowed


def test_loopback_addresses() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "::1", "[::1]", "localhost", "127.1.2.3"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.2", "router.internal"]))


def test_binding_beyond_loopback_without_a_token_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError) as refused:
        SecurityPolicy.for_bind(HttpSettings(), "0.0.0.0", None)

    message = str(refused.value)
    assert "refusing to serve HTTP on 0.0.0.0 without a token" in message
    assert "ROUTER_TOKEN" in message and "127.0.0.1" in message


def test_the_policy_for_each_bind() -> None:
    local = SecurityPolicy.for_bind(HttpSettings(), "127.0.0.1", None)
    named = SecurityPolicy.for_bind(HttpSettings(), "router.internal", "t")
    everywhere = SecurityPolicy.for_bind(HttpSettings(), "0.0.0.0", "t")
    listed = SecurityPolicy.for_bind(HttpSettings(allowed_hosts=["r.example"]), "0.0.0.0", "t")

    assert local.token is None and local.host_allowed("localhost:8765")
    assert not local.host_allowed("evil.example:8765") and not local.host_allowed(None)
    assert local.origin_allowed(None) and local.origin_allowed("http://127.0.0.1:5173")
    assert not local.origin_allowed("http://evil.example")
    assert named.host_allowed("router.internal:8765") and not named.host_allowed("other:8765")
    assert everywhere.host_allowed("10.1.2.3:8765")  # the token guards a wildcard bind
    assert listed.host_allowed("r.example") and not listed.host_allowed("10.1.2.3:8765")


def test_the_token_is_checked_as_a_bearer_credential() -> None:
    policy = SecurityPolicy(token="s3cret")

    assert policy.token_accepted("Bearer s3cret") and policy.token_accepted("bearer s3cret")
    assert not policy.token_accepted("Bearer s3cre") and not policy.token_accepted("s3cret")
    assert not policy.token_accepted("Basic s3cret") and not policy.token_accepted(None)
    assert SecurityPolicy().token_accepted(None)
