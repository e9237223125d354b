"""`${user:NAME}` in a server entry (issue 51): where a per-user value may go, and the
config errors that name the file, the field and the fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from router.config import RemoteServer, StdioServer, parse_config
from router.config.personal import user_value_names, with_user_values
from router.core.errors import ConfigError
from tests.conftest import ROOT

IDENTITIES = {"http": {"oauth": {"issuer": "https://id.example", "audience": "https://r/mcp"}}}


def _parse(server: dict[str, Any], **router: Any) -> Any:
    data = {"mcpServers": {"gh": server}, "router": {**IDENTITIES, **router}}
    return parse_config(data, source="team.json", environ={"ORG": "acme"})


def test_a_value_is_filled_where_its_placeholder_stands_and_nowhere_else() -> None:
    cfg = _parse(
        {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${user:KEY}"}}
    )
    server = cfg.servers["gh"]
    assert isinstance(server, RemoteServer) and user_value_names(server) == ("KEY",)
    filled = with_user_values(server, {"KEY": "s3cret"})
    assert isinstance(filled, RemoteServer) and filled.headers == {"Authorization": "Bearer s3cret"}
    assert server.headers == {"Authorization": "Bearer ${user:KEY}"}  # the entry unchanged
    local = _parse({"command": "gh", "env": {"T": "${user:TOKEN}", "O": "${ORG}"}})
    assert isinstance(local.servers["gh"], StdioServer)
    assert user_value_names(local.servers["gh"]) == ("TOKEN",)
    assert local.servers["gh"].env["O"] == "acme"  # ${VAR} still the operator's


@pytest.mark.parametrize(
    ("server", "field"),
    [
        ({"command": "gh", "args": ["--token", "${user:TOKEN}"]}, "mcpServers.gh.args[1]"),
        ({"url": "https://x.example/${user:T}/mcp"}, "mcpServers.gh.url"),
        ({"command": "gh", "env": {"T": "${user:bad-name}"}}, "mcpServers.gh.env.T"),
    ],
)
def test_a_placeholder_where_none_may_go_names_the_file_and_field(
    server: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse(server)
    message = str(caught.value)
    assert message.startswith(f"team.json: {field}: ") and "Fix:" in message


def test_per_user_values_need_identities_at_the_front_and_a_shared_key_with_a_store() -> None:
    entry = {"command": "gh", "env": {"T": "${user:TOKEN}"}}
    with pytest.raises(ConfigError, match=r"team.json: mcpServers.gh: .*router.http.oauth"):
        parse_config({"mcpServers": {"gh": entry}}, source="team.json")
    with pytest.raises(ConfigError, match=r"mcpServers.gh: .*router.secrets_key"):
        _parse(entry, store={"url": "postgresql://db/router"})
    both = {
        "url": "https://x.example/mcp",
        "headers": {"A": "${user:K}"},
        "oauth": {"perUser": True},
    }
    with pytest.raises(ConfigError, match=r"mcpServers.gh.oauth: .*not both"):
        _parse(both)


def test_the_documented_github_and_slack_example_is_a_valid_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (ROOT / "docs" / "identities.md").read_text("utf-8")
    section = text[text.index("## Per-user keys") :]
    example = section[section.index("```json") + len("```json") : section.index("```\n\n")]
    monkeypatch.setenv("SLACK_TEAM_ID", "T0123")
    monkeypatch.setenv("MCP_ROUTER_STORE_URL", "postgresql://router@db.example.com/router")
    cfg = parse_config(json.loads(example))
    names = {name: user_value_names(server) for name, server in cfg.servers.items()}
    assert names == {
        "github": ("GITHUB_TOKEN",),
        "slack": ("SLACK_TOKEN",),
        "linear": ("LINEAR_KEY",),
    }
    slack = cfg.servers["slack"]
    assert isinstance(slack, StdioServer) and slack.env["SLACK_TEAM_ID"] == "T0123"
    without = json.loads(example)
    del without["router"]["http"]
    with pytest.raises(ConfigError, match=r"mcpServers\.github: .*router\.http\.oauth"):
        parse_config(without)
