"""The conformance suite's client side, with the router as the client: what a person does.

The suite (`conformance client --command "python -m tests.conformance.router_auth_client"`)
starts a scenario's server and runs this with its URL as the last argument and the scenario's
context (pre-registered client, client credentials) in `MCP_CONFORMANCE_CONTEXT`. This writes
a router config for that URL, signs in with `mcp-router auth login` (the `BROWSER` follows
the authorization server's redirects, as a person clicking through would), then drives
`mcp-router serve` over stdio as a host: initialize, list the tools, call the first one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROUTER = [sys.executable, "-m", "router"]
CIMD_URL = "https://conformance-test.local/client-metadata.json"
CONFORMANCE_NAME = "conformance"


def router_config(url: str, context: dict[str, Any], cache_dir: Path) -> dict[str, Any]:
    oauth: dict[str, Any] = {"clientMetadataUrl": CIMD_URL}
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if context.get("client_id"):
        oauth["clientId"] = context["client_id"]
        if context.get("client_secret"):
            oauth["clientSecret"] = context["client_secret"]
    if scenario.startswith("auth/client-credentials"):
        oauth = {"grant": "client_credentials", "clientId": context["client_id"]}
        if context.get("private_key_pem"):
            oauth["privateKey"] = context["private_key_pem"]
            oauth["signingAlgorithm"] = context.get("signing_algorithm", "ES256")
        else:
            oauth["clientSecret"] = context["client_secret"]
    return {
        "mcpServers": {CONFORMANCE_NAME: {"url": url, "oauth": oauth}},
        "router": {"mode": "all", "cache_dir": str(cache_dir), "model": "bm25"},
    }


def open_sign_in(request: dict[str, Any]) -> dict[str, Any]:
    """A host with URL elicitation: the person opens the URL and signs in."""
    params = request.get("params", {})
    if params.get("mode") != "url":
        return {"action": "decline"}
    print(f"host: opening {params['url'][:80]}...", file=sys.stderr)
    opened = subprocess.run(
        [sys.executable, "-m", "tests.conformance.follow_redirects", params["url"]]
    )
    return {"action": "accept" if opened.returncode == 0 else "cancel"}


def drive_serve(config_file: Path) -> int:
    """initialize, tools/list, tools/call of the first tool, as a host over stdio."""
    process = subprocess.Popen(
        [*ROUTER, "serve", "--bm25-only", "--config", str(config_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict[str, Any]) -> None:
        process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    def ask(message_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        send({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params})
        while True:
            answer: dict[str, Any] = json.loads(process.stdout.readline())  # type: ignore[union-attr]
            if answer.get("method") == "elicitation/create" and "id" in answer:
                send({"jsonrpc": "2.0", "id": answer["id"], "result": open_sign_in(answer)})
            elif answer.get("id") == message_id and "method" not in answer:
                return answer

    try:
        ask(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"url": {}}},
                "clientInfo": {"name": "conformance-host", "version": "1"},
            },
        )
        process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
        )
        process.stdin.flush()
        tools = ask(2, "tools/list", {}).get("result", {}).get("tools", [])
        print(f"router listed {[t['name'] for t in tools]}", file=sys.stderr)
        if tools:
            result = ask(3, "tools/call", {"name": tools[0]["name"], "arguments": {}})
            print(f"router call: {json.dumps(result)[:300]}", file=sys.stderr)
        return 0
    finally:
        process.stdin.close()
        process.wait(timeout=20)


def main() -> int:
    url = sys.argv[-1]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        config_file = folder / "servers.json"
        config_file.write_text(json.dumps(router_config(url, context, folder / "cache")))
        env = {
            **os.environ,
            "BROWSER": f"{sys.executable} -m tests.conformance.follow_redirects %s",
        }
        login = subprocess.run(
            [*ROUTER, "auth", "login", CONFORMANCE_NAME, "--config", str(config_file)], env=env
        )
        if login.returncode != 0:
            print(f"auth login exited {login.returncode}", file=sys.stderr)
        return drive_serve(config_file)


if __name__ == "__main__":
    sys.exit(main())
