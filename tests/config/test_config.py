"""The config file: Claude Desktop's shape loads as it is; every error names file, field, fix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from router.config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    RemoteServer,
    StdioServer,
    load_config,
    parse_config,
)
from router.core.errors import ConfigError

# A real Claude Desktop file: top-level app settings beside mcpServers, host-specific keys
# inside the entries, and no `router` section.
CLAUDE_DESKTOP = {
    "globalShortcut": "Ctrl+Space",
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
        },
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"},
        },
        "time": {
            "command": "uvx",
            "args": ["mcp-server-time"],
            "autoApprove": ["get_current_time"],
        },
    },
}


def write(tmp_path: Path, data: Any, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def load_error(tmp_path: Path, data: Any, name: str = "config.json") -> str:
    path = write(tmp_path, data, name)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    assert str(path) in message, message
    assert "Fix:" in message, message
    return message


def test_a_claude_desktop_file_loads_as_it_is(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CLAUDE_DESKTOP, "claude_desktop_config.json"))

    assert list(config.servers) == ["filesystem", "github", "time"]
    github = config.servers["github"]
    assert isinstance(github, StdioServer)
    assert github.command == "npx"
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
    assert config.router.k == 5
    assert config.router.mode == "search"
    assert config.router.model == "minilm-l6-tools"
    assert config.source == tmp_path / "claude_desktop_config.json"
    assert config.timeouts_for("time").connect == DEFAULT_CONNECT_TIMEOUT
    assert config.timeouts_for("time").call == DEFAULT_CALL_TIMEOUT


def test_a_toml_file_with_a_router_section_loads(tmp_path: Path) -> None:
    text = """
[mcpServers.time]
command = "mcp-server-time"
protocol = "2026-07-28"
timeouts = { connect = 5 }

[mcpServers.git]
command = "mcp-server-git"
args = ["--repository", "."]
cwd = "repos"
exclude = ["git_reset"]

[router]
k = 8
pin = ["time/*", "git__git_status"]
mode = "dynamic"
cache_dir = "cache"
timeouts = { connect = 20, call = 60 }
disabled = ["git"]
include = ["*"]
"""
    config = load_config(write(tmp_path, text, "router.toml"))

    assert config.router.k == 8
    assert config.router.pin == ["time/*", "git__git_status"]
    assert config.router.mode == "dynamic"
    assert config.router.cache_dir == tmp_path / "cache"
    git = config.servers["git"]
    assert isinstance(git, StdioServer)
    assert git.cwd == tmp_path / "repos"
    assert git.exclude == ["git_reset"]
    assert list(config.enabled_servers()) == ["time"]
    assert config.servers["time"].connect_mode == "2026-07-28"
    assert config.timeouts_for("time").connect == 5
    assert config.timeouts_for("time").call == 60
    assert config.timeouts_for("git").connect == 20


def test_codex_style_mcp_servers_key_is_accepted() -> None:
    config = parse_config({"mcp_servers": {"time": {"command": "mcp-server-time"}}})
    assert list(config.servers) == ["time"]


def test_remote_entries_parse_and_infer_their_transport() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "plain": {"url": "https://example.com/mcp"},
                "legacy": {"url": "http://127.0.0.1:3001/sse"},
                "typed": {"url": "https://example.com/events", "type": "sse"},
                "explicit": {"url": "https://example.com/sse", "transport": "streamable-http"},
            }
        }
    )
    kinds = {}
    for name, server in config.servers.items():
        assert isinstance(server, RemoteServer)
        kinds[name] = server.effective_transport
    assert kinds == {
        "plain": "streamable-http",
        "legacy": "sse",
        "typed": "sse",
        "explicit": "streamable-http",
    }


def test_variables_in_env_and_headers_are_expanded_from_the_environment() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "gh": {"command": "x", "env": {"TOKEN": "${GH_TOKEN}", "MODE": "${MODE:-fast}"}},
                "api": {"url": "https://e.com/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
            }
        },
        environ={"GH_TOKEN": "t0k", "KEY": "k3y"},
    )
    gh, api = config.servers["gh"], config.servers["api"]
    assert isinstance(gh, StdioServer) and isinstance(api, RemoteServer)
    assert gh.env == {"TOKEN": "t0k", "MODE": "fast"}
    assert api.headers == {"Authorization": "Bearer k3y"}


def test_numbers_in_env_and_args_are_read_as_text() -> None:
    config = parse_config(
        {"mcpServers": {"s": {"command": "x", "args": ["--port", 8080], "env": {"DEBUG": True}}}}
    )
    server = config.servers["s"]
    assert isinstance(server, StdioServer)
    assert server.args == ["--port", "8080"]
    assert server.env == {"DEBUG": "true"}


def test_a_missing_variable_names_the_field_and_the_variable(tmp_path: Path) -> None:
    message = load_error(
        tmp_path, {"mcpServers": {"gh": {"command": "x", "env": {"TOKEN": "${GH_TOKEN}"}}}}
    )
    assert "mcpServers.gh.env.TOKEN" in message
    assert "GH_TOKEN" in message


def test_args_that_are_not_a_list_name_the_field(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {"time": {"command": "x", "args": "--local"}}})
    assert "mcpServers.time.args" in message
    assert "list" in message


def test_an_entry_without_command_or_url_says_what_it_needs(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {"time": {"args": ["x"]}}})
    assert "mcpServers.time:" in message
    assert "command" in message and "url" in message


def test_a_file_without_mcp_servers_says_to_add_it(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"router": {"k": 3}})
    assert "mcpServers" in message
    assert "add it" in message


def test_an_unknown_router_key_lists_the_allowed_ones(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {"kk": 3}})
    assert "router.kk" in message
    assert "pin" in message and "timeouts" in message


def test_an_unknown_timeout_key_lists_connect_and_call(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {"t": {"command": "x", "timeouts": {"read": 3}}}})
    assert "mcpServers.t.timeouts.read" in message
    assert "connect" in message and "call" in message


def test_a_bad_mode_names_the_allowed_values(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {"mode": "fast"}})
    assert "router.mode" in message
    assert "'search'" in message and "'dynamic'" in message


def test_a_bad_k_names_the_field(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {"k": 0}})
    assert "router.k" in message


def test_a_bad_always_load_names_the_field(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {"always_load": "sometimes"}})
    assert "router.always_load" in message


def test_a_bad_protocol_setting_names_the_choices(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {"t": {"command": "x", "protocol": "new"}}})
    assert "mcpServers.t.protocol" in message
    assert "legacy" in message and "2026-07-28" in message


def test_a_negative_timeout_names_the_field(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {"timeouts": {"call": -1}}})
    assert "router.timeouts.call" in message


def test_a_non_http_url_names_the_field(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {"r": {"url": "ftp://example.com"}}})
    assert "mcpServers.r.url" in message


def test_a_disabled_name_that_is_not_a_server_names_the_known_ones(tmp_path: Path) -> None:
    message = load_error(
        tmp_path, {"mcpServers": {"time": {"command": "x"}}, "router": {"disabled": ["tiem"]}}
    )
    assert "router.disabled[0]" in message
    assert "time" in message


def test_a_server_name_with_a_slash_is_refused(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {"a/b": {"command": "x"}}})
    assert "a/b" in message


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    message = load_error(tmp_path, '{"mcpServers": {"time": {"command": "x",}}}')
    assert "line 1 column" in message


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    message = load_error(tmp_path, "[mcpServers.time\ncommand = 1", "config.toml")
    assert "invalid TOML" in message


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "absent.json")


def test_a_top_level_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    message = load_error(tmp_path, "[1, 2]")
    assert "mcpServers" in message


def test_unknown_keys_in_a_server_entry_are_tolerated_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = parse_config(
        {"mcpServers": {"t": {"command": "x", "colour": "blue", "type": "stdio"}}}
    )
    assert isinstance(config.servers["t"], StdioServer)
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "colour" in warned
    assert "'type'" not in warned


@pytest.mark.parametrize(
    ("entry", "key", "meant"),
    [
        ({"comand": "x", "args": []}, "comand", "command"),
        ({"ulr": "https://example.com/mcp"}, "ulr", "url"),
        ({"command": "x", "arg": ["--flag"]}, "arg", "args"),
        ({"command": "x", "protocl": "legacy"}, "protocl", "protocol"),
        ({"command": "x", "exlude": ["git_reset"]}, "exlude", "exclude"),
        ({"url": "https://example.com/mcp", "Headers": {}}, "Headers", "headers"),
        ({"serverUrl": "https://example.com/mcp"}, "serverUrl", "url"),
        ({"command": "x", "excludeTools": ["git_reset"]}, "excludeTools", "exclude"),
    ],
)
def test_a_misspelled_server_key_is_an_error_naming_the_key_meant(
    tmp_path: Path, entry: dict[str, Any], key: str, meant: str
) -> None:
    message = load_error(tmp_path, {"mcpServers": {"t": entry}})
    assert f"mcpServers.t.{key}: unknown key '{key}' \u2014 did you mean '{meant}'?" in message
    assert "neither" not in message  # the typo explains a kindless entry; no second error


def test_keys_other_hosts_use_load_silently(caplog: pytest.LogCaptureFixture) -> None:
    foreign = {
        "type": "stdio",
        "autoApprove": [],
        "alwaysAllow": [],
        "timeout": 60,
        "description": "d",
        "enabled": True,
        "trust": False,
        "envFile": ".env",
        "dev": {"watch": "src/**"},
        "tool_timeout_sec": 30,
    }
    config = parse_config({"mcpServers": {"t": {"command": "x", **foreign}}})

    assert isinstance(config.servers["t"], StdioServer)
    assert not caplog.records


def test_a_misspelled_router_key_names_the_key_meant(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {"pinn": ["a/*"]}})
    assert "router.pinn: unknown key 'pinn' \u2014 did you mean 'pin'?" in message


def test_a_relative_command_path_is_resolved_against_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {
        "mcpServers": {
            "local": {"command": "../servers/bin/mcp-server-time", "cwd": "work"},
            "dotted": {"command": "./run.sh"},
            "home": {"command": "~/bin/server"},
            "onpath": {"command": "uvx", "args": ["mcp-server-time"]},
            "absolute": {"command": "/usr/bin/node"},
        }
    }
    (tmp_path / "conf").mkdir()
    write(tmp_path / "conf", data)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # A relative config path: the command must still become absolute, since with `cwd`
    # set the OS would look for a relative command from there.
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("conf") / "config.json")

    def command(name: str) -> str:
        server = config.servers[name]
        assert isinstance(server, StdioServer)
        return server.command

    local = Path(command("local"))
    assert local.is_absolute()
    assert local == tmp_path / "conf" / ".." / "servers" / "bin" / "mcp-server-time"
    assert Path(command("dotted")) == tmp_path / "conf" / "run.sh"
    assert command("home") == str(tmp_path / "home" / "bin" / "server")
    assert command("onpath") == "uvx"
    assert command("absolute") == "/usr/bin/node"


def test_router_store_is_a_url_or_a_section() -> None:
    short = parse_config({"mcpServers": {}, "router": {"store": "postgresql://db/tools"}})
    assert short.router.store is not None
    assert (short.router.store.url, short.router.store.search) == ("postgresql://db/tools", "auto")
    full = parse_config(
        {
            "mcpServers": {},
            "router": {
                "store": {
                    "url": "postgresql://router:${PGPASSWORD}@db/tools",
                    "namespace": "team",
                    "search": "hnsw",
                    "ef_search": 200,
                }
            },
        },
        environ={"PGPASSWORD": "pw"},
    )
    assert full.router.store is not None
    assert full.router.store.url == "postgresql://router:pw@db/tools"
    assert (full.router.store.namespace, full.router.store.ef_search) == ("team", 200)
    assert "pw" not in repr(full.router.store)
    assert parse_config({"mcpServers": {}}).router.store is None


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("sqlite:///tmp/x", "router.store.url: 'sqlite:///tmp/x' is not a PostgreSQL URL"),
        ({"url": "postgresql://db/x", "search": "ivf"}, "router.store.search"),
        ({"url": "postgresql://db/x", "ef_serach": 10}, "router.store.ef_serach"),
    ],
)
def test_a_bad_store_names_its_field(store: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config({"mcpServers": {}, "router": {"store": store}})


@pytest.mark.parametrize(
    ("key", "value"), [("names_after_k", -1), ("names_after_k", "ten"), ("name_line_chars", 5)]
)
def test_a_bad_names_after_k_or_line_length_names_the_field(
    tmp_path: Path, key: str, value: object
) -> None:
    message = load_error(tmp_path, {"mcpServers": {}, "router": {key: value}})
    assert f"router.{key}" in message
