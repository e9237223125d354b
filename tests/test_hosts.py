"""The parts of `router.hosts`: edits that keep the rest of a file, entry conversion, paths."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from router.hosts import jsonc, toml_edit
from router.hosts.base import Places
from router.hosts.discovery import host_files, install_target
from router.hosts.entries import Variables, convert, input_variable, launches_router

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
    assert any("args[1]" in note and "passed as written" in note for note in notes)
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
