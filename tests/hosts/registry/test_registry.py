"""Servers from the MCP registry (`mcp-router add`, `router.hosts.registry`), against
recorded `server.json` files of real servers (`tests/fixtures/registry/`, their origins in
SOURCES.md) and a loopback registry that answers the API's shapes (`/v0.1/servers`, search,
versions, one version) from them. The CLI runs as a subprocess, as a user types it; the
entries it writes are started by `mcp-router inspect`, the packages installed from npm and
PyPI into the config's cache folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from router.config import RemoteServer, StdioServer, parse_config
from router.hosts.merge import EVERY_VARIABLE
from router.hosts.registry.document import read_server
from router.hosts.registry.entries import entry_for
from tests.support.ports import free_port
from tests.upstream.test_upstream_pool import Installed
from tests.upstream.test_upstream_pool import installed as installed  # the fixture

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "registry"
DOCUMENTS = sorted(FIXTURES.glob("*.server.json"))
WRITTEN = FIXTURES / "written"
"""Documents written for these tests in the registry's schema (their README says why)."""
UNFILLED = re.compile(r"(?<!\$)\{[A-Za-z_][A-Za-z0-9_.-]*\}")
"""A `{name}` left in an entry: no server takes one."""


def document(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{name}.server.json").read_text("utf-8"))
    return loaded


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "router", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )


# -- every recorded document ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [*DOCUMENTS, *sorted(WRITTEN.glob("*.server.json"))],
    ids=lambda p: p.name.removesuffix(".server.json"),
)
def test_every_recorded_document_becomes_an_entry_serve_reads(path: Path) -> None:
    raw = json.loads(path.read_text("utf-8"))
    added = entry_for(read_server(raw))
    config = parse_config({"mcpServers": {added.name: added.entry}}, environ=EVERY_VARIABLE)
    server = config.servers[added.name]
    assert isinstance(server, StdioServer | RemoteServer)
    # what the user must set is a placeholder, never a value, and no `{name}` is left
    text = json.dumps(added.entry)
    for item in added.needed:
        assert f"${{{item.name}}}" in text
    assert not UNFILLED.search(text), text
    if isinstance(server, StdioServer):
        assert server.command in ("npx", "uvx")


def test_old_and_new_schema_versions_of_one_server_give_one_entry() -> None:
    old = entry_for(read_server(document("figma-context-mcp-2025-07-09")))
    new = entry_for(read_server(document("figma-context-mcp")))
    assert old.entry == {
        "command": "npx",
        "args": ["-y", "figma-developer-mcp@0.5.2", "--stdio"],
        "env": {"FIGMA_API_KEY": "${FIGMA_API_KEY}", "NODE_ENV": "cli"},
    }
    assert new.entry["args"] == ["-y", "figma-developer-mcp@0.6.4", "--stdio"]
    assert [(n.name, n.secret) for n in old.needed] == [("FIGMA_API_KEY", True)]


def test_a_remote_gets_its_transport_and_an_optional_secret_header_is_left_out() -> None:
    github = entry_for(read_server(document("github-mcp-server")))
    axiom = entry_for(read_server(document("axiom")))
    # its Authorization header is an optional secret: left out (the router signs in with
    # OAuth on a 401) and named
    assert github.entry == {"url": "https://api.githubcopilot.com/mcp/"}
    assert [(o.name, o.secret) for o in github.optional] == [
        ("GITHUB_MCP_SERVER_AUTHORIZATION", True)
    ]
    assert any("oci" in note and "not run" in note for note in github.notes)
    assert axiom.entry == {"url": "https://mcp.axiom.co/sse", "transport": "sse"}
    assert entry_for(read_server(document("axiom")), prefer="remote").entry == axiom.entry


def test_optional_secrets_are_left_out_and_named_and_a_preference_picks_the_remote() -> None:
    context7 = read_server(document("context7"))
    local = entry_for(context7)
    remote = entry_for(context7, prefer="remote")
    assert local.entry == {"command": "npx", "args": ["-y", "@upstash/context7-mcp@2.0.2"]}
    assert [(o.name, o.secret) for o in local.optional] == [("CONTEXT7_API_KEY", True)]
    assert remote.entry == {"url": "https://mcp.context7.com/mcp"}  # its header is optional
    assert any("mcpb" in note for note in local.notes)


def test_a_url_template_needs_its_variables_and_a_required_secret_is_a_placeholder() -> None:
    from router.core.errors import ConfigError

    doc = {
        "name": "io.example/tenant",
        "remotes": [
            {
                "type": "streamable-http",
                "url": "https://{tenant_id}.api.example.com/mcp",
                "variables": {"tenant_id": {"description": "your tenant", "isRequired": True}},
                "headers": [{"name": "X-Api-Key", "isRequired": True, "isSecret": True}],
            }
        ],
    }
    with pytest.raises(ConfigError, match=r"needs tenant_id: pass --set tenant_id=VALUE"):
        entry_for(read_server(doc))
    made = entry_for(read_server(doc), values={"tenant_id": "acme"})
    assert made.entry == {
        "url": "https://acme.api.example.com/mcp",
        "headers": {"X-Api-Key": "${TENANT_X_API_KEY}"},  # a required secret: a placeholder
    }
    assert [(n.name, n.secret) for n in made.needed] == [("TENANT_X_API_KEY", True)]


# -- placeholders in values ----------------------------------------------------------------


@pytest.mark.processes
def test_a_templated_secret_header_becomes_a_placeholder_that_add_names(tmp_path: Path) -> None:
    # `"value": "Bearer {token}"`, secret and required, with no `variables` for `{token}`
    config = tmp_path / "servers.json"
    done = cli("add", str(WRITTEN / "notes-mcp.server.json"), "--config", str(config))
    assert "NOTES_MCP_TOKEN" not in os.environ
    unset = cli("inspect", "--config", str(config))

    assert done.returncode == 0, done.stderr
    entry = json.loads(config.read_text("utf-8"))["mcpServers"]["notes-mcp"]
    assert entry["headers"] == {
        "Authorization": "Bearer ${NOTES_MCP_TOKEN}",
        "X-Acme-Client": "mcp-registry",  # no braces: written as it is
    }
    assert done.stderr.splitlines()[1:] == [
        "  set NOTES_MCP_TOKEN (secret): {token} in Authorization: "
        "An Acme Notes API token (Settings > API)"
    ]
    text = (ROOT / "docs" / "registry.md").read_text("utf-8")
    documented = re.findall(r"```\n(added .*?)```", text, re.DOTALL)
    said = [line.replace(str(config), "servers.json") for line in done.stderr.splitlines()]
    assert said == documented[1].splitlines()
    # unset, the router does not start, and says which variable to set
    assert unset.returncode == 2
    assert "headers.Authorization: environment variable NOTES_MCP_TOKEN is not set" in (
        unset.stderr
    )
    # set, the header carries it
    loaded = parse_config({"mcpServers": {"notes": entry}}, environ={"NOTES_MCP_TOKEN": "t0k"})
    server = loaded.servers["notes"]
    assert isinstance(server, RemoteServer)
    assert server.headers["Authorization"] == "Bearer t0k"


@pytest.mark.processes
def test_variables_name_defaults_and_repeats_and_two_values_never_share_a_variable(
    tmp_path: Path,
) -> None:
    config = tmp_path / "servers.json"
    done = cli("add", str(WRITTEN / "tickets-mcp.server.json"), "--config", str(config))

    assert done.returncode == 0, done.stderr
    entry = json.loads(config.read_text("utf-8"))["mcpServers"]["tickets-mcp"]
    assert entry == {
        "command": "npx",
        "args": [
            "-y",
            "@acme-labs/tickets-mcp@2.1.0",
            # `{region}` has a default in its `variables`: optional
            "--api-url",
            "https://${TICKETS_MCP_REGION:-eu}.tickets.example/api",
            "--token",
            "${TICKETS_MCP_API_KEY}",
            "--workspace",
            "${TICKETS_MCP_WORKSPACE_ID}",
        ],
        "env": {
            "TICKETS_AUTH": "Basic ${TICKETS_MCP_API_KEY}",  # `{api_key}` again: one variable
            # `{workspace_id}` is another value than `{workspaceId}`, whose name it derives
            "TICKETS_WORKSPACE": "ws/${TICKETS_MCP_WORKSPACE_ID_2}",
            "TICKETS_LOG_FORMAT": "json",
        },  # TICKETS_PROXY, optional and wanting `{proxy_host}`, is left out
    }
    assert done.stderr.splitlines()[1:] == [
        "  set TICKETS_MCP_API_KEY (secret): A Tickets API key (Profile > Keys)",
        "  set TICKETS_MCP_WORKSPACE_ID (required): {workspaceId} in --workspace: "
        "The workspace to open",
        "  set TICKETS_MCP_WORKSPACE_ID_2 (required): {workspace_id} in TICKETS_WORKSPACE: "
        "The workspace attachments are filed under",
        "  optional: TICKETS_MCP_REGION (default 'eu'): Your data region",
        "  optional, left out: TICKETS_PROXY: An HTTP proxy to reach the API through",
    ]

    environ = {
        "TICKETS_MCP_API_KEY": "k",
        "TICKETS_MCP_WORKSPACE_ID": "w1",
        "TICKETS_MCP_WORKSPACE_ID_2": "w2",
    }
    server = parse_config({"mcpServers": {"t": entry}}, environ=environ).servers["t"]
    assert isinstance(server, StdioServer)
    assert server.args[3] == "https://eu.tickets.example/api"
    assert server.env["TICKETS_WORKSPACE"] == "ws/w2"
    us = parse_config({"mcpServers": {"t": entry}}, environ={**environ, "TICKETS_MCP_REGION": "us"})
    assert isinstance(us.servers["t"], StdioServer)
    assert us.servers["t"].args[3] == "https://us.tickets.example/api"
    from router.core.errors import ConfigError

    del environ["TICKETS_MCP_WORKSPACE_ID_2"]
    with pytest.raises(ConfigError, match="environment variable TICKETS_MCP_WORKSPACE_ID_2 is not"):
        parse_config({"mcpServers": {"t": entry}}, environ=environ)


@pytest.mark.processes
def test_add_says_when_another_entry_reads_the_same_variable(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    mine = {"command": "figma-local", "env": {"FIGMA_API_KEY": "${FIGMA_API_KEY}"}}
    config.write_text(json.dumps({"mcpServers": {"figma-work": mine}}))
    done = cli("add", str(FIXTURES / "figma-context-mcp.server.json"), "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert (
        "  note: mcpServers.figma-work reads ${FIGMA_API_KEY} too: both get its one value "
        "(rename it in one of them if they are different accounts)"
    ) in done.stderr.splitlines()


def test_a_derived_name_never_starts_with_a_digit_and_a_written_variable_is_kept() -> None:
    doc = {
        "name": "io.example/1password",
        "remotes": [
            {
                "type": "streamable-http",
                "url": "https://mcp.example.com/mcp",
                "headers": [
                    {"name": "Authorization", "value": "Bearer {token}", "isRequired": True},
                    {"name": "X-Home", "value": "${HOME}/{path}", "isRequired": True},
                ],
            }
        ],
    }
    made = entry_for(read_server(doc))
    assert made.entry["headers"] == {
        "Authorization": "Bearer ${_1PASSWORD_TOKEN}",  # `${1PASSWORD_TOKEN}` is not read
        "X-Home": "${HOME}/${_1PASSWORD_PATH}",
    }
    # a token no prose holds: parsing remembers header values as secrets for this process's
    # logs, and `Bearer t` masked "a Bearer token" in a later test on the same worker
    environ = {"_1PASSWORD_TOKEN": "tk-5f2e9a", "_1PASSWORD_PATH": "p", "HOME": "/h"}
    server = parse_config({"mcpServers": {"x": made.entry}}, environ=environ).servers["x"]
    assert isinstance(server, RemoteServer)
    assert server.headers == {"Authorization": "Bearer tk-5f2e9a", "X-Home": "/h/p"}


# -- the registry's API, on loopback ---------------------------------------------------------


class _Registry(BaseHTTPRequestHandler):
    """`/v0.1/servers` (search, cursor, limit), `/versions` and one version, from the
    recorded documents, in the API's envelope."""

    documents: ClassVar[dict[str, dict[str, Any]]] = {}

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        meta = {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": True}}
        if parts.path == "/v0.1/servers":
            term = query.get("search", [""])[0]
            names = sorted(n for n in self.documents if term in n)
            start = names.index(query["cursor"][0]) if "cursor" in query else 0
            limit = int(query.get("limit", ["30"])[0])
            page = names[start : start + min(limit, 2)]  # two a page: the client must follow
            rest = names[start + len(page) :]
            metadata: dict[str, Any] = {"count": len(page)}
            if rest:
                metadata["nextCursor"] = rest[0]
            servers = [{"server": self.documents[n], "_meta": meta} for n in page]
            self._send(200, {"servers": servers, "metadata": metadata})
            return
        segments = parts.path.removeprefix("/v0.1/servers/").split("/")
        name = unquote(segments[0])
        if name not in self.documents or segments[1:2] != ["versions"]:
            self._send(404, {"title": "Not Found", "status": 404, "detail": "Server not found"})
            return
        doc = self.documents[name]
        if len(segments) == 2:
            self._send(200, {"servers": [{"server": doc, "_meta": meta}], "metadata": {"count": 1}})
            return
        version = unquote(segments[2])
        if version not in ("latest", doc.get("version")):
            self._send(404, {"title": "Not Found", "status": 404, "detail": "Server not found"})
            return
        self._send(200, {"server": doc, "_meta": meta})


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    docs = [json.loads(p.read_text("utf-8")) for p in DOCUMENTS if "2025-" not in p.name]
    handler = type("Recorded", (_Registry,), {"documents": {d["name"]: d for d in docs}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.processes
def test_add_by_registry_name_writes_the_entry_and_names_what_to_set(
    registry: str, tmp_path: Path
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": "x"}}, "router": {"k": 3}}))
    done = cli(
        "add", "io.github.GLips/Figma-Context-MCP", "--registry", registry, "--config", str(config)
    )
    again = cli(
        "add", "io.github.GLips/Figma-Context-MCP", "--registry", registry, "--config", str(config)
    )
    unknown = cli("add", "io.example/none", "--registry", registry, "--config", str(config))
    found = cli("add", "--search", "io.github.m", "--registry", registry)

    assert done.returncode == 0, done.stderr
    written = json.loads(config.read_text("utf-8"))
    assert written["router"] == {"k": 3} and "time" in written["mcpServers"]  # all else kept
    assert written["mcpServers"]["figma-context-mcp"]["env"] == {
        "FIGMA_API_KEY": "${FIGMA_API_KEY}"
    }
    assert "set FIGMA_API_KEY (secret): Your Figma Personal Access Token" in done.stderr
    assert list(tmp_path.glob("servers.json.bak-*")), "the old file is backed up"
    assert again.returncode == 2 and "mcpServers.figma-context-mcp exists already" in again.stderr
    assert unknown.returncode == 2 and "not in the registry (404)" in unknown.stderr
    # the search followed every page (two a page here)
    names = [line.split()[0] for line in found.stdout.splitlines()]
    assert found.returncode == 0 and names == [
        "io.github.modelcontextprotocol/server-everything",
        "io.github.modelcontextprotocol/server-time",
        "io.github.mongodb-js/mongodb-mcp-server",
        "io.github.motherduckdb/mcp-server-motherduck",
    ]


# -- entries that start ------------------------------------------------------------------------


def _inspect(config: Path) -> dict[str, Any]:
    done = cli("inspect", "--json", "--config", str(config), "--wait", "120")
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return {u["name"]: u for u in report["upstreams"]}


@pytest.mark.processes
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_installed_npm_and_pypi_servers_and_a_remote_start(
    tmp_path: Path, installed: Installed
) -> None:
    config, other = tmp_path / "servers.json", tmp_path / "other" / "servers.json"
    other.parent.mkdir()
    for path in (config, other):  # one cache folder for both
        router = {"cache_dir": str(tmp_path / "cache")}
        path.write_text(json.dumps({"mcpServers": {}, "router": router}))
    # server-time's recorded 0.6.2 predates the SDK's 2.0, which its loose `mcp>=1.0`
    # pulls in and which it cannot import: the release the tests' own copy runs instead
    time_release = _version_of(Path(installed.pypi("time", "mcp-server-time")["command"]))
    # the two installs at once (npm's and pip's own folders), each into its own config
    adds = [
        ([str(FIXTURES / "context7.server.json")], config),
        ([str(FIXTURES / "server-time.server.json"), "--version", time_release], other),
    ]
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "router", "add", *source, "--config", str(path), "--install"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for source, path in adds
    ]
    for child in running:
        _, said = child.communicate(timeout=600)
        assert child.returncode == 0, said[-2000:]
    done = cli("add", str(FIXTURES / "axiom.server.json"), "--config", str(config))
    assert done.returncode == 0, done.stderr
    merged = json.loads(config.read_text("utf-8"))
    merged["mcpServers"].update(json.loads(other.read_text("utf-8"))["mcpServers"])
    config.write_text(json.dumps(merged))
    written = json.loads(config.read_text("utf-8"))["mcpServers"]
    node = tmp_path / "cache" / "servers" / "node" / "node_modules" / ".bin" / "context7-mcp"
    assert written["context7"] == {"command": str(node), "args": []}
    assert written["server-time"]["command"] == str(
        tmp_path / "cache" / "servers" / "server-time" / "bin" / "mcp-server-time"
    )
    assert written["mcp"] == {"url": "https://mcp.axiom.co/sse", "transport": "sse"}

    # The remote is started at a loopback server of the same transport (its own host is
    # not reachable from here): the entry's shape is what is under test.
    everything = installed.npm("server-everything", "sse")
    remote_config = dict(json.loads(config.read_text("utf-8")))
    port = free_port()
    remote_config["mcpServers"]["mcp"]["url"] = f"http://127.0.0.1:{port}/sse"
    config.write_text(json.dumps(remote_config))
    with subprocess.Popen(
        [everything["command"], *everything["args"]],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        try:
            # inspect gives a remote a few retries, not a slow start: wait until it listens
            assert _listening(server, "Server is running on port"), "the SSE server did not start"
            upstreams = _inspect(config)
        finally:
            server.terminate()
    for name in ("context7", "server-time", "mcp"):
        assert upstreams[name]["state"] == "healthy", upstreams[name]
        assert upstreams[name]["tools"] > 0


LISTEN_TIMEOUT = 60.0


def _listening(server: subprocess.Popen[str], said: str) -> bool:
    """Whether `server` wrote `said` on stderr within LISTEN_TIMEOUT; its stderr is drained
    on a thread from then on, so the pipe never fills."""
    ready = threading.Event()

    def drain() -> None:
        assert server.stderr is not None
        for line in server.stderr:
            if said in line:
                ready.set()

    threading.Thread(target=drain, daemon=True).start()
    return ready.wait(LISTEN_TIMEOUT)


def _version_of(script: Path) -> str:
    python = script.parent / "python"
    code = "import importlib.metadata as m; print(m.version('mcp-server-time'))"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


@pytest.mark.processes
def test_the_documented_example_is_what_add_writes(registry: str, tmp_path: Path) -> None:
    text = (ROOT / "docs" / "registry.md").read_text("utf-8")
    entry = json.loads(re.findall(r"```json\n(.*?)```", text, re.DOTALL)[0])
    said = re.findall(r"```\n(added .*?)```", text, re.DOTALL)[0].splitlines()
    config = tmp_path / "servers.json"
    done = cli(
        "add", "io.github.GLips/Figma-Context-MCP", "--registry", registry, "--config", str(config)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(config.read_text("utf-8"))["mcpServers"] == entry
    lines = [line.replace(str(config), "servers.json") for line in done.stderr.splitlines()]
    assert lines == said


@pytest.mark.processes
def test_import_adds_registry_servers_beside_the_hosts(registry: str, tmp_path: Path) -> None:
    host = tmp_path / "mcp.json"
    host.write_text(json.dumps({"mcpServers": {"context7": {"command": "context7-local"}}}))
    done = cli(
        "import",
        str(host),
        "--registry",
        "io.github.upstash/context7",
        "--registry",
        str(FIXTURES / "axiom.server.json"),
        "--registry-url",
        registry,
        env={"HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    servers = json.loads(done.stdout)["mcpServers"]
    assert servers == {
        "context7": {"command": "context7-local"},  # the host's own keeps its name
        "context7-2": {"command": "npx", "args": ["-y", "@upstash/context7-mcp@2.0.2"]},
        "mcp": {"url": "https://mcp.axiom.co/sse", "transport": "sse"},
    }
    assert "added context7-2 (io.github.upstash/context7" in done.stderr
