"""`mcp-router import` against each host's real config file, in a temporary home.

Each host's file is written as the host documents it (docs/hosts/ cites where), at the
place the host keeps it on Linux and on macOS; the real CLI runs as a subprocess with HOME
pointing at the temporary home (for macOS paths, with `sys.platform` set to `darwin` once the
CLI is loaded).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from router.config import RemoteServer, load_config
from router.hosts import jsonc
from router.hosts.discovery import HOSTS
from router.hosts.entries import launches_router
from router.hosts.merge import EVERY_VARIABLE

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
CLI = ["-m", "router", "import"]
# Everything the command loads is loaded first: the standard library itself looks at
# `sys.platform` while importing.
AS_MACOS = [
    "-c",
    "import sys; from router.cli.main import main; import router.hosts.merge; "
    "sys.platform = 'darwin'; raise SystemExit(main(sys.argv[1:]))",
    "import",
]
# Where desktop apps keep settings, relative to the home folder.
CONFIG_DIR = {"linux": ".config", "darwin": "Library/Application Support"}

CLAUDE_DESKTOP = """{
  "globalShortcut": "Alt+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"]
    },
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
    }
  }
}
"""
CLAUDE_CODE_USER = """{
  "numStartups": 12,
  "mcpServers": {
    "context7": {"type": "stdio", "command": "npx", "args": ["-y", "@upstash/context7-mcp"],
                 "env": {}}
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {"sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"}}
    }
  }
}
"""
CLAUDE_CODE_PROJECT = """{
  "mcpServers": {
    "api-server": {
      "type": "sse",
      "url": "${API_BASE_URL:-https://api.example.com}/mcp",
      "headers": {"Authorization": "Bearer ${API_KEY}"}
    }
  }
}
"""
CURSOR = """{
  "mcpServers": {
    "github": {
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}
    },
    "local-db": {
      "command": "node",
      "args": ["${userHome}/servers/db.js"],
      "env": {"DB_URL": "${env:DATABASE_URL}"}
    }
  }
}
"""
CURSOR_PROJECT = """{
  "mcpServers": {
    "project-tools": {"command": "python", "args": ["${workspaceFolder}/tools/server.py"]}
  }
}
"""
VSCODE_WORKSPACE = """{
  // Secrets VS Code asks for once and keeps
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key",
     "password": true}
  ],
  "servers": {
    "perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}
    },
    "microsoft-docs": {"type": "http", "url": "https://learn.microsoft.com/api/mcp"},
  }
}
"""
VSCODE_USER = """{
  "servers": {
    "memory": {"type": "stdio", "command": "npx",
               "args": ["-y", "@modelcontextprotocol/server-memory"]}
  },
  "inputs": []
}
"""
VSCODE_SETTINGS = """{
  "editor.fontSize": 14,
  "mcp": {
    "servers": {
      "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]}
    }
  }
}
"""
WINDSURF = """{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
    },
    "figma": {
      "serverUrl": "https://mcp.figma.com/mcp",
      "headers": {"Authorization": "Bearer ${env:FIGMA_TOKEN}"},
      "disabledTools": ["delete_file"]
    },
    "zapier": {"serverUrl": "https://actions.zapier.com/mcp/KEY/sse", "disabled": true}
  }
}
"""
CODEX = """model = "gpt-5"
approval_policy = "on-request"

# documentation lookups
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env_vars = ["CONTEXT7_API_KEY"]
startup_timeout_sec = 20
tool_timeout_sec = 60

[mcp_servers.context7.env]
LOG_LEVEL = "info"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
enabled_tools = ["get_file"]

[mcp_servers.off]
command = "off-server"
enabled = false

[profiles.fast]
model = "gpt-5-mini"
"""
COPILOT_CLI = """{
  "mcpServers": {
    "playwright": {
      "type": "local",
      "command": "npx",
      "args": ["-y", "@playwright/mcp@latest"],
      "env": {"DEBUG": "pw:api"},
      "tools": ["*"]
    },
    "context7": {
      "type": "http",
      "url": "https://mcp.context7.com/mcp",
      "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
      "tools": ["resolve-library-id", "get-library-docs"],
      "deferTools": "never"
    }
  },
  "theme": "dark"
}
"""


@dataclass(frozen=True)
class Case:
    """One host's files (`~/` under the home folder, else under the project) and what the
    router config must hold after importing them."""

    host: str
    files: Mapping[str, str]
    servers: Mapping[str, Any]
    label: str


def cases(home: Path, project: Path) -> list[Case]:
    return [
        Case(
            "claude-desktop",
            {"<config>/Claude/claude_desktop_config.json": CLAUDE_DESKTOP},
            {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"],
                },
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"},
                },
            },
            "Claude Desktop",
        ),
        Case(
            "claude-code",
            {"~/.claude.json": CLAUDE_CODE_USER, ".mcp.json": CLAUDE_CODE_PROJECT},
            {
                "context7": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"]},
                "sentry": {"url": "https://mcp.sentry.dev/mcp", "transport": "streamable-http"},
                "api-server": {
                    "url": "https://api.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${API_KEY}"},
                    "transport": "sse",
                },
            },
            "Claude Code",
        ),
        Case(
            "cursor",
            {"~/.cursor/mcp.json": CURSOR, ".cursor/mcp.json": CURSOR_PROJECT},
            {
                "github": {
                    "url": "https://api.githubcopilot.com/mcp/",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                },
                "local-db": {
                    "command": "node",
                    "args": [f"{home}/servers/db.js"],
                    "env": {"DB_URL": "${DATABASE_URL}"},
                },
                "project-tools": {"command": "python", "args": [f"{project}/tools/server.py"]},
            },
            "Cursor",
        ),
        Case(
            "vscode",
            {
                ".vscode/mcp.json": VSCODE_WORKSPACE,
                "<config>/Code/User/mcp.json": VSCODE_USER,
                "<config>/Code/User/settings.json": VSCODE_SETTINGS,
            },
            {
                "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
                "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
                "perplexity": {
                    "command": "npx",
                    "args": ["-y", "server-perplexity-ask"],
                    "env": {"PERPLEXITY_API_KEY": "${PERPLEXITY_KEY}"},
                },
                "microsoft-docs": {
                    "url": "https://learn.microsoft.com/api/mcp",
                    "transport": "streamable-http",
                },
            },
            "VS Code",
        ),
        Case(
            "windsurf",
            {"~/.codeium/windsurf/mcp_config.json": WINDSURF},
            {
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"},
                },
                "figma": {
                    "url": "https://mcp.figma.com/mcp",
                    "headers": {"Authorization": "Bearer ${FIGMA_TOKEN}"},
                    "exclude": ["delete_file"],
                },
                "zapier": {"url": "https://actions.zapier.com/mcp/KEY/sse", "disabled": True},
            },
            "Windsurf",
        ),
        Case(
            "codex",
            {"~/.codex/config.toml": CODEX},
            {
                "context7": {
                    "command": "npx",
                    "args": ["-y", "@upstash/context7-mcp"],
                    "env": {"LOG_LEVEL": "info", "CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
                    "timeouts": {"connect": 20, "call": 60},
                },
                "figma": {
                    "url": "https://mcp.figma.com/mcp",
                    "headers": {
                        "X-Figma-Region": "us-east-1",
                        "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}",
                    },
                    "include": ["get_file"],
                },
                "off": {"command": "off-server", "disabled": True},
            },
            "Codex",
        ),
        Case(
            "copilot-cli",
            {"~/.copilot/mcp-config.json": COPILOT_CLI},
            {
                "playwright": {
                    "command": "npx",
                    "args": ["-y", "@playwright/mcp@latest"],
                    "env": {"DEBUG": "pw:api"},
                },
                "context7": {
                    "url": "https://mcp.context7.com/mcp",
                    "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
                    "transport": "streamable-http",
                    "include": ["resolve-library-id", "get-library-docs"],
                },
            },
            "Copilot CLI",
        ),
    ]


@dataclass
class Machine:
    """A temporary home and project folder, and the CLI run against them."""

    home: Path
    project: Path
    platform: str = "linux"

    def path(self, place: str) -> Path:
        if place.startswith("<config>/"):
            return self.home / CONFIG_DIR[self.platform] / place.removeprefix("<config>/")
        if place.startswith("~/"):
            return self.home / place.removeprefix("~/")
        return self.project / place

    def write(self, files: Mapping[str, str]) -> None:
        for place, text in files.items():
            path = self.path(place)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run_with({}, *args)

    def run_with(self, environ: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        """The CLI with `environ` added to its environment."""
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("XDG_CONFIG_HOME", "CODEX_HOME", "COPILOT_HOME", "APPDATA")
        }
        env["HOME"] = str(self.home)
        env["API_BASE_URL"] = "https://api.example.com"
        env.update(environ)
        prefix = AS_MACOS if self.platform == "darwin" else CLI
        return subprocess.run(
            [sys.executable, *prefix, *args],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def snapshot(self) -> dict[Path, bytes]:
        return {
            path: path.read_bytes()
            for root in (self.home, self.project)
            for path in sorted(root.rglob("*"))
            if path.is_file()
        }


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    home, project = tmp_path / "home", tmp_path / "work" / "app"
    home.mkdir()
    project.mkdir(parents=True)
    return Machine(home, project)


def _case(machine: Machine, host: str) -> Case:
    return next(case for case in cases(machine.home, machine.project) if case.host == host)


@pytest.mark.parametrize("platform", ["linux", "darwin"])
@pytest.mark.parametrize("host", HOSTS)
def test_each_host_file_becomes_router_servers(machine: Machine, host: str, platform: str) -> None:
    machine.platform = platform
    case = _case(machine, host)
    machine.write(case.files)
    done = machine.run()
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    assert config == {"mcpServers": case.servers}
    for place in case.files:
        assert str(machine.path(place)) in done.stderr  # what was found where
    assert f"{case.label}" in done.stderr
    summary = done.stderr.strip().splitlines()[-1]
    assert f"{len(case.servers)} servers" in summary


def test_vscode_inputs_become_variables_and_the_report_names_them(machine: Machine) -> None:
    machine.write({".vscode/mcp.json": VSCODE_WORKSPACE})
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "${input:perplexity-key} (VS Code asks for 'Perplexity API Key') is now " in done.stderr
    assert "set PERPLEXITY_KEY in the environment the router starts in" in done.stderr


def test_clashes_and_duplicates_are_reported_and_nothing_is_dropped(machine: Machine) -> None:
    """Claude Desktop's and Windsurf's `github` are the same server (kept once); Cursor's is
    another (renamed); a broken entry is reported; every entry is accounted for."""
    machine.write(
        {
            "<config>/Claude/claude_desktop_config.json": CLAUDE_DESKTOP,
            "~/.cursor/mcp.json": CURSOR.replace(
                '"local-db"', '"broken": {"args": ["x"]},\n    "local-db"'
            ),
            "~/.codeium/windsurf/mcp_config.json": WINDSURF,
        }
    )
    done = machine.run()
    assert done.returncode == 0, done.stderr
    servers = json.loads(done.stdout)["mcpServers"]
    assert set(servers) == {"filesystem", "github", "github-cursor", "local-db", "figma", "zapier"}
    assert servers["github"]["command"] == "npx"
    assert servers["github-cursor"]["url"] == "https://api.githubcopilot.com/mcp/"
    claude = machine.path("<config>/Claude/claude_desktop_config.json")
    assert (
        f"  github: added as 'github-cursor': a different server has that name "
        f"(Claude Desktop: {claude})"
    ) in done.stderr
    assert f"  github: the same server as 'github' (Claude Desktop: {claude}): kept once" in (
        done.stderr
    )
    assert "  broken: SKIPPED: it has neither `command` nor `url`" in done.stderr
    summary = done.stderr.strip().splitlines()[-1]
    assert summary == (
        "8 entries in 3 files: 6 servers, 1 renamed, 1 duplicate kept once, 1 SKIPPED -> stdout"
    )


INSTALL_FILES = {
    "claude-desktop": "<config>/Claude/claude_desktop_config.json",
    "claude-code": "~/.claude.json",
    "cursor": "~/.cursor/mcp.json",
    "vscode": "<config>/Code/User/mcp.json",
    "windsurf": "~/.codeium/windsurf/mcp_config.json",
    "codex": "~/.codex/config.toml",
    "copilot-cli": "~/.copilot/mcp-config.json",
}
KEEP_LOADED = {
    "claude-code": {"alwaysLoad": True},
    "copilot-cli": {"tools": ["*"], "deferTools": "never"},
}
"""The host's own setting that keeps the router's tools out of its tool search, where it has
one (docs/hosts/): a host without one gets no made-up key."""
SERVERS_KEY = {
    "claude-desktop": ("mcpServers",),
    "claude-code": ("mcpServers",),
    "cursor": ("mcpServers",),
    "vscode": ("servers",),
    "windsurf": ("mcpServers",),
    "codex": ("mcp_servers",),
    "copilot-cli": ("mcpServers",),
}


def _decode(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if ".toml" in path.name:  # config.toml, or its backup config.toml.bak-...
        return tomllib.loads(text)
    decoded: dict[str, Any] = jsonc.load(text, "jsonc")
    return decoded


def _without_servers(doc: dict[str, Any], host: str) -> dict[str, Any]:
    rest = {key: value for key, value in doc.items() if key != SERVERS_KEY[host][0]}
    if host == "claude-code":
        rest["projects"] = {
            path: {key: value for key, value in project.items() if key != "mcpServers"}
            for path, project in rest.get("projects", {}).items()
        }
    return rest


@pytest.mark.parametrize(
    ("host", "platform"),
    [(host, "linux") for host in HOSTS] + [("claude-desktop", "darwin"), ("vscode", "darwin")],
)
def test_install_round_trip(machine: Machine, host: str, platform: str) -> None:
    machine.platform = platform
    case = _case(machine, host)
    machine.write(case.files)
    target = machine.path(INSTALL_FILES[host])
    old_text = target.read_text(encoding="utf-8")
    out = machine.home / "router" / "servers.json"
    done = machine.run("--install", host, "--out", str(out))
    assert done.returncode == 0, done.stderr

    backups = list(target.parent.glob(f"{target.name}.bak-*"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == old_text
    assert f"backup: {backups[0]}" in done.stderr
    assert f"installed: {target}" in done.stderr

    after, before = _decode(target), _decode(backups[0])
    servers = after
    for key in SERVERS_KEY[host]:
        servers = servers[key]
    assert list(servers) == ["mcp-router"]
    entry = servers["mcp-router"]
    assert entry["args"] == ["serve", "--config", str(out)]
    assert Path(entry["command"]).is_absolute() and os.access(entry["command"], os.X_OK)
    settings = {
        key: value for key, value in entry.items() if key not in ("type", "command", "args")
    }
    assert settings == KEEP_LOADED.get(host, {})
    assert _without_servers(after, host) == _without_servers(before, host)  # all else kept
    if host == "claude-code":
        assert after["projects"]["/home/me/app"]["mcpServers"] == {}

    config = load_config(out, environ=EVERY_VARIABLE)  # what `serve --config` reads
    assert set(config.servers) >= set(_decode(out)["mcpServers"])
    assert json.loads(out.read_text(encoding="utf-8"))["mcpServers"] == {
        name: server for name, server in case.servers.items()
    }


def test_a_second_import_after_install_reads_the_router_config_and_changes_nothing(
    machine: Machine,
) -> None:
    machine.write({**_case(machine, "claude-desktop").files, **_case(machine, "cursor").files})
    out = machine.home / "router" / "servers.json"
    first = machine.run("--install", "claude-desktop", "--out", str(out))
    assert first.returncode == 0, first.stderr
    written = out.read_text(encoding="utf-8")

    again = machine.run("--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"mcp-router: the router itself, serving {out} (read below)" in again.stderr
    assert out.read_text(encoding="utf-8") == written
    assert not list(out.parent.glob("servers.json.bak-*"))  # unchanged: no backup either


def test_dry_run_shows_the_diff_and_writes_nothing(machine: Machine) -> None:
    machine.write(_case(machine, "codex").files)
    before = machine.snapshot()
    out = machine.home / "router" / "servers.json"
    done = machine.run("--install", "codex", "--out", str(out), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert machine.snapshot() == before
    assert not out.exists()
    codex = machine.path("~/.codex/config.toml")
    assert f"--- {codex}\n+++ {codex}\n" in done.stdout
    assert "-[mcp_servers.context7]\n" in done.stdout
    assert "+[mcp_servers.mcp-router]\n" in done.stdout
    assert f"--- /dev/null\n+++ {out}\n" in done.stdout
    assert "dry run: nothing written" in done.stderr


def test_install_creates_a_host_file_that_does_not_exist(machine: Machine) -> None:
    machine.write(_case(machine, "claude-desktop").files)
    out = machine.home / "router" / "servers.json"
    done = machine.run("--install", "cursor", "--out", str(out))
    assert done.returncode == 0, done.stderr
    created = machine.path("~/.cursor/mcp.json")
    entry = json.loads(created.read_text(encoding="utf-8"))["mcpServers"]["mcp-router"]
    assert entry["args"] == ["serve", "--config", str(out)]
    assert not list(created.parent.glob("mcp.json.bak-*"))


def test_install_refuses_when_a_server_of_that_host_cannot_be_imported(machine: Machine) -> None:
    machine.write(
        {
            "~/.cursor/mcp.json": '{"mcpServers": {"broken": {"args": []}, '
            '"ok": {"command": "ok-server"}}}'
        }
    )
    before = machine.snapshot()
    done = machine.run("--install", "cursor", "--out", str(machine.home / "servers.json"))
    assert done.returncode == 2
    assert "not installing: 'broken' (it has neither `command` nor `url`)" in done.stderr
    assert f"Fix: correct or remove it in {machine.path('~/.cursor/mcp.json')}" in done.stderr
    assert machine.snapshot() == before


def test_a_host_file_that_does_not_parse_names_the_file_and_place(machine: Machine) -> None:
    machine.write({"~/.cursor/mcp.json": '{"mcpServers": {"a": {"command": "x",}}}'})
    done = machine.run()
    assert done.returncode == 2
    assert f"{machine.path('~/.cursor/mcp.json')}: line 1 column 38: invalid JSON" in done.stderr
    assert "Fix: correct the syntax there" in done.stderr


def test_copilot_cli_under_copilot_home_is_installed_beside_the_other_hosts_servers(
    machine: Machine,
) -> None:
    """`$COPILOT_HOME` moves Copilot CLI's folder; its servers join Claude Desktop's in the
    router config, and its file keeps its other settings and gets the router alone, never
    deferred. A file Copilot CLI could not parse is named, and nothing is written."""
    copilot_home = machine.home / "copilot-elsewhere"
    target = copilot_home / "mcp-config.json"
    machine.write(
        {
            "<config>/Claude/claude_desktop_config.json": CLAUDE_DESKTOP,
            str(target): COPILOT_CLI,
        }
    )
    out = machine.home / "router" / "servers.json"
    done = machine.run_with(
        {"COPILOT_HOME": str(copilot_home)}, "--install", "copilot-cli", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert f"Copilot CLI: {target}: 2 servers" in done.stderr
    assert f"installed: {target} now starts the router only" in done.stderr
    servers = json.loads(out.read_text(encoding="utf-8"))["mcpServers"]
    assert set(servers) == {"filesystem", "github", "playwright", "context7"}
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written["theme"] == "dark"
    (entry,) = written["mcpServers"].values()
    assert entry["type"] == "local" and entry["deferTools"] == "never"
    assert entry["tools"] == ["*"]
    assert entry["args"] == ["serve", "--config", str(out)]

    target.write_text('{"mcpServers": {"a": {"command": "x"}},}', encoding="utf-8")
    before = machine.snapshot()
    broken = machine.run_with(
        {"COPILOT_HOME": str(copilot_home)}, "--install", "copilot-cli", "--out", str(out)
    )
    assert broken.returncode == 2
    assert f"{target}: line 1 column 40: invalid JSON" in broken.stderr
    assert "JSON allows no comments or trailing commas" in broken.stderr
    assert machine.snapshot() == before


def test_bad_sources_are_usage_errors(machine: Machine) -> None:
    missing = machine.run("no-such-file.json")
    assert missing.returncode == 2
    assert "no-such-file.json: no such file. Fix:" in missing.stderr
    nothing = machine.run()
    assert nothing.returncode == 2
    assert "no MCP servers found (looked in " in nothing.stderr
    host = machine.run("windsurf")
    assert host.returncode == 2
    assert "windsurf: no config found (looked in " in host.stderr
    unknown = machine.run("--install", "notepad")
    assert unknown.returncode == 2
    assert "invalid choice: 'notepad'" in unknown.stderr


def test_a_file_given_as_source_is_read_by_its_shape(machine: Machine, tmp_path: Path) -> None:
    source = tmp_path / "team-servers.json"
    source.write_text(VSCODE_USER, encoding="utf-8")  # `servers`: VS Code's shape
    machine.write(_case(machine, "windsurf").files)
    done = machine.run(str(source))
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["mcpServers"]) == {"memory"}  # the source only
    assert f"VS Code: {source}: 1 server" in done.stderr


def test_a_file_that_cannot_be_written_is_a_runtime_failure(machine: Machine) -> None:
    machine.write(_case(machine, "windsurf").files)
    blocker = machine.home / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    done = machine.run("--out", str(blocker / "servers.json"))
    assert done.returncode == 1
    assert f"mcp-router import: error: cannot write {blocker}" in done.stderr


CLAUDE_CODE_OAUTH = """{
  "mcpServers": {
    "linear": {"type": "http", "url": "https://mcp.linear.app/mcp",
               "oauth": {"clientId": "abc", "callbackPort": 8080}},
    "context7": {"type": "stdio", "command": "npx", "args": ["-y", "@upstash/context7-mcp"]}
  }
}
"""
SIGN_IN_INTRO = "these remote servers may need sign-in before their tools work:"


def test_install_carries_oauth_settings_and_names_each_sign_in(machine: Machine) -> None:
    machine.write({"~/.claude.json": CLAUDE_CODE_OAUTH})
    out = machine.home / "router" / "servers.json"
    done = machine.run("--install", "claude-code", "--out", str(out))
    assert done.returncode == 0, done.stderr

    servers = json.loads(out.read_text(encoding="utf-8"))["mcpServers"]
    assert servers["linear"] == {
        "url": "https://mcp.linear.app/mcp",
        "transport": "streamable-http",
        "oauth": {"clientId": "abc", "callbackPort": 8080},
    }
    config = load_config(out, environ=EVERY_VARIABLE)  # what `serve` and `auth login` read
    linear = config.servers["linear"]
    assert isinstance(linear, RemoteServer) and linear.oauth is not None
    assert (linear.oauth.client_id, linear.oauth.callback_port) == ("abc", 8080)

    host = _decode(machine.path("~/.claude.json"))["mcpServers"]
    assert list(host) == ["mcp-router"] and launches_router(host["mcp-router"])
    assert host["mcp-router"]["args"] == ["serve", "--config", str(out)]

    lines = done.stderr.splitlines()
    intro = lines.index(SIGN_IN_INTRO)
    assert lines[intro - 1].startswith(f"installed: {machine.path('~/.claude.json')}")
    assert lines[intro + 1 :] == [
        f"  sign in once: mcp-router auth login linear --config {out}"
    ]  # one line per remote server; the stdio one signs in to nothing
    assert "clientSecret" in done.stderr  # Claude Code keeps a client secret elsewhere

    written = out.read_text(encoding="utf-8")
    again = machine.run("--out", str(out))  # the router config read back keeps its oauth
    assert again.returncode == 0, again.stderr
    assert out.read_text(encoding="utf-8") == written


def test_oauth_keys_the_router_lacks_are_left_out_with_a_note(machine: Machine) -> None:
    machine.write(
        {
            ".mcp.json": json.dumps(
                {
                    "mcpServers": {
                        "notion": {
                            "type": "http",
                            "url": "https://mcp.notion.com/mcp",
                            "oauth": {
                                "client_id": "abc",
                                "scopes": "read write",
                                "prompt": "consent",
                            },
                        }
                    }
                }
            )
        }
    )
    done = machine.run("claude-code")
    assert done.returncode == 0, done.stderr
    notion = json.loads(done.stdout)["mcpServers"]["notion"]
    assert notion["oauth"] == {"clientId": "abc", "scopes": "read write"}  # snake_case mapped
    assert "    note: left out: oauth.prompt (the router's oauth has no such setting)" in (
        done.stderr.splitlines()
    )


def test_a_server_with_its_own_authorization_header_needs_no_sign_in(machine: Machine) -> None:
    machine.write(
        {
            "~/.cursor/mcp.json": json.dumps(
                {
                    "mcpServers": {
                        "github": {
                            "url": "https://api.githubcopilot.com/mcp/",
                            "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"},
                        },
                        "sentry": {"url": "https://mcp.sentry.dev/mcp"},
                        "local-db": {"command": "node", "args": ["db.js"]},
                    }
                }
            )
        }
    )
    out = machine.home / "router" / "servers.json"
    dry = machine.run("--install", "cursor", "--out", str(out), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stderr.splitlines()
    intro = lines.index(f"after the install, {SIGN_IN_INTRO}")
    assert lines[intro + 1 :] == [
        f"  sign in once: mcp-router auth login sentry --config {out}",
        "dry run: nothing written",
    ]
    assert not out.exists()

    machine.write(
        {"~/.cursor/mcp.json": CURSOR}  # every remote server here sends its own header
    )
    done = machine.run("--install", "cursor", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "sign-in" not in done.stderr and "auth login" not in done.stderr


def test_endpoints_give_each_host_its_servers_and_install_serves_the_hosts_own(
    machine: Machine,
) -> None:
    """`--endpoints`: one endpoint per host, a server two hosts share in both; `--install`
    then makes that host's entry serve its own endpoint."""
    machine.write(
        {
            "<config>/Claude/claude_desktop_config.json": CLAUDE_DESKTOP,
            "~/.cursor/mcp.json": CURSOR,
            "~/.codeium/windsurf/mcp_config.json": WINDSURF,
        }
    )
    out = machine.home / "router" / "servers.json"
    done = machine.run("--endpoints", "--install", "cursor", "--out", str(out))
    assert done.returncode == 0, done.stderr

    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["router"]["endpoints"] == {
        "claude-desktop": {"servers": ["filesystem", "github"]},
        "cursor": {"servers": ["github-cursor", "local-db"]},
        "windsurf": {"servers": ["github", "figma", "zapier"]},
    }
    entry = _decode(machine.path(INSTALL_FILES["cursor"]))["mcpServers"]["mcp-router"]
    assert entry["args"] == ["serve", "--config", str(out), "--endpoint", "cursor"]
    config = load_config(out, environ=EVERY_VARIABLE)  # what `serve --endpoint` reads
    assert set(config.router.endpoints) == {"claude-desktop", "cursor", "windsurf"}

    # a second import keeps an endpoint the user added, and rewrites the hosts' own
    own = {**written["router"]["endpoints"], "mine": {"servers": ["github"], "k": 3}}
    out.write_text(json.dumps({**written, "router": {"endpoints": own}}), encoding="utf-8")
    again = machine.run("--endpoints", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["router"]["endpoints"] == own
