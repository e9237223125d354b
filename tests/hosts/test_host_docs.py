"""Every snippet of the host pages (docs/hosts/) is what that host reads, and what the router
makes of it.

Config snippets are fenced as ```json|jsonc|toml file=PATH role=before|after```:
- each is parsed as the host parses that file (strict JSON, JSONC or TOML), by the host
  format `mcp-router import` uses for a file at PATH;
- a `before` snippet, written at PATH in a temporary home, goes through `mcp-router import`
  and every server in it is added;
- an `after` snippet is exactly the router entry `--install` writes, and when the page has a
  `before` snippet of the same file, `--install` turns that one into this one.
The overview page (docs/hosts/index.md) is no host's: its entry must start the router, and
its commands are checked as the host pages' are.
Shell snippets hold only commands whose arguments can be checked here: `mcp-router ...`
parses with the CLI's own parser; `claude mcp add`, `claude mcp add-json`, `codex mcp add`
and `code --add-mcp` must start the router.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from router.cli.main import build_parser, main
from router.hosts.base import FileFormat, Places, lookup
from router.hosts.discovery import HOSTS, host_files
from router.hosts.entries import launches_router

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "hosts"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)
CONFIG_LANGUAGES = {"json", "jsonc", "toml"}


@dataclass(frozen=True)
class Snippet:
    page: str
    language: str
    attributes: dict[str, str]
    body: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.language}:{self.attributes.get('role', '')}:" + (
            self.attributes.get("file", "")
        )


def snippets() -> list[Snippet]:
    found = []
    for page in sorted(PAGES.glob("*.md")):
        for match in FENCE.finditer(page.read_text(encoding="utf-8")):
            language, *rest = match.group("info").split() or [""]
            attributes = dict(item.split("=", 1) for item in rest)
            found.append(Snippet(page.stem, language, attributes, match.group("body")))
    return found


OVERVIEW = "index"
CONFIGS = [
    item for item in snippets() if item.language in CONFIG_LANGUAGES and item.page != OVERVIEW
]
SHELL = [item for item in snippets() if item.language not in CONFIG_LANGUAGES]


def test_there_is_a_page_for_every_host_and_each_shows_the_router_entry() -> None:
    assert sorted(page.stem for page in PAGES.glob("*.md") if page.stem != OVERVIEW) == sorted(
        HOSTS
    )
    for host in HOSTS:
        roles = {item.attributes.get("role") for item in CONFIGS if item.page == host}
        assert roles == {"before", "after"}, host
    assert all(item.language == "sh" for item in SHELL), [item.id for item in SHELL]


@dataclass
class Home:
    home: Path
    project: Path

    @property
    def places(self) -> Places:
        return Places(home=self.home, project=self.project, platform="linux", environ={})

    def path(self, place: str) -> Path:
        if place.startswith("~/"):
            return self.home / place.removeprefix("~/")
        return self.project / place

    def format(self, place: str) -> FileFormat:
        path = self.path(place)
        matches = [item.format for item in host_files(self.places) if item.path == path]
        assert matches, f"{place} is not a file any host reads"
        return matches[0]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    folders = Home(tmp_path / "home" / "me", tmp_path / "home" / "me" / "work" / "app")
    folders.project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folders.home))
    for name in ("XDG_CONFIG_HOME", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(folders.project)
    return folders


def _servers(fmt: FileFormat, doc: dict[str, Any]) -> dict[str, Any]:
    tables = [lookup(doc, keys) for keys, _ in fmt.tables(doc)]
    return {name: entry for table in tables if table for name, entry in table.items()}


@pytest.mark.parametrize("snippet", CONFIGS, ids=[item.id for item in CONFIGS])
def test_config_snippet_reads_as_the_host_reads_it(
    snippet: Snippet, home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    place = snippet.attributes["file"]
    fmt = home.format(place)
    assert fmt.host == snippet.page
    assert snippet.language == fmt.syntax, f"{place} is {fmt.syntax}, not {snippet.language}"
    doc = fmt.decode(snippet.body, Path(place))  # the host's own syntax: strict JSON, JSONC, TOML
    servers = _servers(fmt, doc)
    assert servers

    if snippet.attributes["role"] == "before":
        path = home.path(place)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(snippet.body, encoding="utf-8")
        code = main(["import", str(path)])
        output = capsys.readouterr()
        assert code == 0, output.err
        for name in servers:
            assert re.search(rf"^  {re.escape(name)}: added", output.err, re.MULTILINE), name
        assert len(json.loads(output.out)["mcpServers"]) == len(servers)
        return

    read = fmt.read(home.path(place), snippet.body, home.places)
    assert not read.found and not read.skipped
    assert [router.name for router in read.routers] == ["mcp-router"]
    entry = servers["mcp-router"]
    assert entry == fmt.router_entry(entry["command"], entry["args"])  # what --install writes
    assert read.routers[0].config == Path("/home/me/.config/mcp-router/servers.json")
    before = next(
        (
            item
            for item in CONFIGS
            if item.page == snippet.page
            and item.attributes == {**snippet.attributes, "role": "before"}
        ),
        None,
    )
    if before is not None:
        installed = fmt.install(before.body, entry["command"], entry["args"])
        assert fmt.decode(installed, Path(place)) == doc
        if fmt.syntax == "toml":
            assert installed == snippet.body


def _commands(body: str) -> list[list[str]]:
    lines = body.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if shlex.split(line, comments=True)]


@pytest.mark.parametrize("snippet", SHELL, ids=[item.id for item in SHELL])
def test_shell_snippet_commands_are_valid(snippet: Snippet) -> None:
    for words in _commands(snippet.body):
        entry = _router_entry(words)
        if entry is None:
            build_parser().parse_args(words[1:])  # exits 2 on a bad option
        else:
            assert launches_router(entry), words
            assert entry["args"][-2:] == ["--config", "/home/me/.config/mcp-router/servers.json"]


def _router_entry(words: list[str]) -> dict[str, Any] | None:
    """The server entry a host's own command adds; None for `mcp-router` itself."""
    if words[0] == "mcp-router":
        return None
    if words[:3] in (["claude", "mcp", "add"], ["codex", "mcp", "add"]):
        command = words[words.index("--") + 1 :]
        return {"command": command[0], "args": command[1:]}
    if words[:3] == ["claude", "mcp", "add-json"]:
        return dict(json.loads(words[-1]))
    if words[:2] == ["code", "--add-mcp"]:
        entry = dict(json.loads(words[2]))
        assert entry.pop("name") == "mcp-router"
        return entry
    raise AssertionError(f"a command this test cannot check: {shlex.join(words)}")


def test_the_overview_entry_starts_the_router() -> None:
    overview = [item for item in snippets() if item.page == OVERVIEW]
    entries = [json.loads(item.body) for item in overview if item.language == "json"]
    assert len(entries) == 1
    assert launches_router(entries[0]["mcpServers"]["mcp-router"])


def test_the_pages_are_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for host in HOSTS:
        assert f"docs/hosts/{host}.md" in readme
