"""The parts of `router.hosts`: edits that keep the rest of a file, entry conversion, paths."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import get_args

import pytest

from router.config.fields import ExpandedSecret, ExpandedText
from router.config.oauth import OAuthSettings
from router.hosts import jsonc, oauth, toml_edit
from router.hosts.base import Places
from router.hosts.discovery import host_files, install_target
from router.hosts.entries import Variables, convert, input_variable, launches_router
from router.hosts.formats import codex, cursor

VSCODE = """{
  // servers for this repository
  "inputs": [],
  "servers": {
    "old": {"type": "stdio", "command": "old-server"}, // going away
  },
  /* kept */ "other": [1, 2,],
}
"""


def test_jsonc_replace_changes_one_value_and_keeps_comments() -> None:
    new = jsonc.replace(VSCODE, ("servers",), {"mcp-router": {"command": "r"}}, "jsonc")
    assert "// servers for this repository" in new
    assert '/* kept */ "other": [1, 2,],' in new
    assert "old-server" not in new
    assert jsonc.load(new, "jsonc") == {
        "inputs": [],
        "servers": {"mcp-router": {"command": "r"}},
        "other": [1, 2],
    }


def test_jsonc_replace_adds_missing_members_and_objects() -> None:
    settings = '{\n    "editor.fontSize": 14\n}\n'
    new = jsonc.replace(settings, ("mcp", "servers"), {"a": {"command": "x"}})
    assert jsonc.load(new) == {"editor.fontSize": 14, "mcp": {"servers": {"a": {"command": "x"}}}}
    assert '\n    "mcp": {\n        "servers": {' in new  # the file's own indentation
    assert jsonc.load(jsonc.replace("{}", ("k",), 1)) == {"k": 1}
    assert jsonc.load(jsonc.replace('{"a": 1,}', ("b",), 2, "jsonc"), "jsonc") == {"a": 1, "b": 2}


def test_strict_json_refuses_what_jsonc_allows() -> None:
    with pytest.raises(jsonc.JsonSyntaxError) as error:
        jsonc.load('{"a": 1,}')
    assert (error.value.line, error.value.column) == (1, 9)
    assert jsonc.load('{"a": 1, /* c */}', "jsonc") == {"a": 1}
    with pytest.raises(jsonc.JsonSyntaxError, match="line 2"):
        jsonc.load('{"a":\n  nope}', "jsonc")


CODEX = """model = "o3"  # the default

# docs lookups
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.context7.env]
KEY = "v"

[mcp_servers."my server"]
url = "https://example.com/mcp"
notes = '''
[not.a.table]
'''

[profiles.o3]
model = "o3"
"""


def test_toml_replace_tables_cuts_the_servers_and_keeps_the_rest() -> None:
    entry = {"command": "/bin/mcp-router", "args": ["serve", "--config", "/a b/servers.json"]}
    new = toml_edit.replace_tables(CODEX, "mcp_servers", {"mcp-router": entry})
    assert tomllib.loads(new) == {
        "model": "o3",
        "profiles": {"o3": {"model": "o3"}},
        "mcp_servers": {"mcp-router": entry},
    }
    assert 'model = "o3"  # the default' in new
    assert "# docs lookups" not in new  # the comment over a removed table goes with it
    assert new.endswith(
        '\n[mcp_servers.mcp-router]\ncommand = "/bin/mcp-router"\n'
        'args = ["serve", "--config", "/a b/servers.json"]\n'
    )


def test_toml_replace_tables_refuses_a_top_level_inline_table() -> None:
    with pytest.raises(toml_edit.TomlEditError):
        toml_edit.replace_tables('mcp_servers = { a = { command = "x" } }\n', "mcp_servers", {})


def _variables(**kwargs: object) -> Variables:
    return Variables(home=Path("/home/me"), project=Path("/work/app"), **kwargs)  # type: ignore[arg-type]


def test_convert_reads_each_host_spelling() -> None:
    windsurf, _ = convert({"serverUrl": "https://x.dev/sse", "disabledTools": ["rm"]}, _variables())
    assert windsurf == {"url": "https://x.dev/sse", "exclude": ["rm"]}
    vscode, notes = convert(
        {"type": "sse", "url": "https://x.dev/events", "headers": {"K": "${input:api-key}"}},
        _variables(inputs={"api-key": "Key"}),
    )
    assert vscode == {
        "url": "https://x.dev/events",
        "headers": {"K": "${API_KEY}"},
        "transport": "sse",
    }
    assert "set API_KEY in the environment the router starts in" in notes[0]
    cursor, notes = convert(
        {"command": "node", "args": ["${userHome}/s.js", "${env:PORT}"], "envFile": ".env"},
        _variables(env_prefix=True, editor=True),
    )
    assert cursor == {"command": "node", "args": ["/home/me/s.js", "${PORT}"]}
    assert not any("args[1]" in note for note in notes)  # the router expands ${PORT} in args
    assert any("envFile" in note for note in notes)


def test_input_ids_become_variable_names() -> None:
    assert input_variable("github-token") == "GITHUB_TOKEN"
    assert input_variable("1password") == "INPUT_1PASSWORD"


def test_the_router_itself_is_recognised() -> None:
    assert launches_router({"command": "/v/bin/mcp-router", "args": ["serve", "--config", "c"]})
    assert launches_router({"command": "python3", "args": ["-m", "router", "serve"]})
    assert launches_router({"command": "uvx", "args": ["mcp-router", "serve"]})
    assert not launches_router({"command": "mcp-router", "args": ["inspect"]})
    assert not launches_router({"command": "npx", "args": ["-y", "server"]})


def test_paths_follow_the_platform_and_the_environment(tmp_path: Path) -> None:
    def paths(platform: str, **environ: str) -> set[Path]:
        places = Places(home=tmp_path, project=tmp_path / "p", platform=platform, environ=environ)
        return {item.path for item in host_files(places)}

    mac = paths("darwin")
    support = tmp_path / "Library" / "Application Support"
    assert support / "Claude" / "claude_desktop_config.json" in mac
    assert support / "Code" / "User" / "mcp.json" in mac
    linux = paths("linux", XDG_CONFIG_HOME=str(tmp_path / "xdg"), CODEX_HOME=str(tmp_path / "cx"))
    assert tmp_path / "xdg" / "Claude" / "claude_desktop_config.json" in linux
    assert tmp_path / "cx" / "config.toml" in linux
    assert tmp_path / ".codeium" / "windsurf" / "mcp_config.json" in linux


def test_vscode_install_goes_to_settings_only_when_only_settings_has_servers(
    tmp_path: Path,
) -> None:
    places = Places(home=tmp_path, project=tmp_path, platform="linux", environ={})
    with_servers = {"mcp": {"servers": {"a": {"command": "x"}}}}
    assert install_target(places, "vscode", with_servers).path.name == "settings.json"
    assert install_target(places, "vscode", {}).path.name == "mcp.json"


def test_the_oauth_keys_carried_are_the_routers() -> None:
    fields = OAuthSettings.model_fields
    assert set(oauth.KEYS) == {field.alias for field in fields.values()}
    assert {oauth.NAMES[name] for name in fields} == set(oauth.KEYS)  # snake_case too
    expanding = {ExpandedText, ExpandedSecret}  # the router fills in `${VAR}` in these
    assert {
        field.alias for field in fields.values() if expanding & set(get_args(field.annotation))
    } == oauth.EXPANDED


def test_convert_carries_oauth_in_the_routers_spelling() -> None:
    entry, notes = convert(
        {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "oauth": {
                "clientId": "abc",
                "client_secret": "${SECRET}",
                "authServerMetadataUrl": "https://auth.example.com/${TENANT}/meta",
                "redirectUri": "https://app.example.com/cb",
            },
        },
        _variables(),
    )
    assert entry["oauth"] == {
        "clientId": "abc",
        "clientSecret": "${SECRET}",  # a reference stays a reference
        "authServerMetadataUrl": "https://auth.example.com/${TENANT}/meta",
    }
    assert "left out: oauth.redirectUri (the router's oauth has no such setting)" in notes
    assert not any("oauth.clientSecret" in note for note in notes)  # the router expands it
    assert any("oauth.authServerMetadataUrl" in note and "as written" in note for note in notes)
    local, notes = convert({"command": "x", "oauth": {"clientId": "abc"}}, _variables())
    assert local == {"command": "x"}
    assert notes == ["left out: oauth (a local server does not sign in)"]


def test_cursor_auth_and_codex_oauth_become_the_routers_oauth(tmp_path: Path) -> None:
    places = Places(home=tmp_path, project=tmp_path, platform="linux", environ={})
    variables = cursor.GLOBAL.variables({}, places)
    entry, notes = cursor.GLOBAL.convert(
        {
            "url": "https://mcp.example.com/mcp",
            "auth": {
                "CLIENT_ID": "${env:CLIENT}",
                "CLIENT_SECRET": "${env:SECRET}",
                "scopes": ["read", "write"],
                "AUDIENCE": "api",
            },
        },
        variables,
    )
    assert entry["oauth"] == {
        "clientId": "${CLIENT}",
        "clientSecret": "${SECRET}",
        "scopes": ["read", "write"],
    }
    assert notes == ["left out: auth.AUDIENCE (the router's oauth has no such setting)"]

    server = tomllib.loads(
        '[s]\nurl = "https://mcp.example.com/mcp"\nscopes = ["read"]\n'
        'oauth_resource = "https://mcp.example.com"\n'
        '[s.oauth]\nclient_id = "abc"\ncallback_port = 5555\ncallback_url = "http://l/cb"\n'
    )["s"]
    entry, notes = codex.GLOBAL.convert(server, codex.GLOBAL.variables({}, places))
    assert entry == {
        "url": "https://mcp.example.com/mcp",
        "oauth": {"clientId": "abc", "callbackPort": 5555, "scopes": ["read"]},
    }
    assert "left out: oauth.callback_url (the router's oauth has no such setting)" in notes
    assert "left out: oauth_resource (the router has no such setting)" in notes


def test_which_servers_may_need_a_sign_in() -> None:
    url = "https://mcp.example.com/mcp"
    assert oauth.needs_sign_in({"url": url})
    assert oauth.needs_sign_in({"url": "http://127.0.0.1:9000/mcp", "oauth": {"clientId": "a"}})
    assert not oauth.needs_sign_in({"url": url, "headers": {"authorization": "Bearer ${T}"}})
    assert not oauth.needs_sign_in({"url": "http://mcp.example.com/mcp"})  # no tokens over it
    assert not oauth.needs_sign_in({"url": url, "oauth": {"grant": "client_credentials"}})
    assert not oauth.needs_sign_in({"url": url, "disabled": True})
    assert not oauth.needs_sign_in({"command": "npx"})
