"""A handshake-era upstream with one of everything a server offers, that writes down every
request it receives.

Usage: `storeroom.py LOG`. Each request is appended to LOG as its method and what it names
(a tool's or prompt's name, a URI, a completion's reference), flushed before the answer is
sent, so once a client has an answer the line is on disk (a subscription the router makes
in the background lands when it is made).

Offers: the tool `count_stock()`; the resource `shop://config` (which holds a password);
the template `shop://items/{sku}`; the prompt `restock(sku)`, whose `sku` completes to
`sku-1`, `sku-2`; subscriptions to any resource.
"""

import json
import sys
from typing import Any

TOOLS = [
    {
        "name": "count_stock",
        "description": "Count the stock of the storeroom",
        "inputSchema": {"type": "object", "properties": {}},
    }
]
RESOURCES = [{"uri": "shop://config", "name": "config", "mimeType": "text/plain"}]
TEMPLATES = [{"uriTemplate": "shop://items/{sku}", "name": "item"}]
PROMPTS = [
    {
        "name": "restock",
        "description": "Ask to restock an item",
        "arguments": [{"name": "sku", "required": True}],
    }
]


def _target(method: str, params: dict[str, Any]) -> str:
    if method == "completion/complete":
        ref = params.get("ref") or {}
        return str(ref.get("name") or ref.get("uri") or "")
    return str(params.get("name") or params.get("uri") or "")


def _answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {
                "tools": {},
                "resources": {"subscribe": True},
                "prompts": {},
                "completions": {},
            },
            "serverInfo": {"name": "storeroom", "version": "1.0"},
        }
    uri = str(params.get("uri", ""))
    sku = str((params.get("arguments") or {}).get("sku", ""))
    answers: dict[str, Any] = {
        "tools/list": {"tools": TOOLS},
        "tools/call": {"content": [{"type": "text", "text": "12 in stock"}], "isError": False},
        "resources/list": {"resources": RESOURCES},
        "resources/templates/list": {"resourceTemplates": TEMPLATES},
        "resources/read": {
            "contents": [
                {
                    "uri": uri,
                    "mimeType": "text/plain",
                    "text": "db_password=hunter2" if uri == "shop://config" else f"item {uri}",
                }
            ]
        },
        "prompts/list": {"prompts": PROMPTS},
        "prompts/get": {
            "messages": [{"role": "user", "content": {"type": "text", "text": f"restock {sku}"}}]
        },
        "completion/complete": {"completion": {"values": ["sku-1", "sku-2"], "hasMore": False}},
        "resources/subscribe": {},
        "resources/unsubscribe": {},
        "ping": {},
        "logging/setLevel": {},
    }
    return answers.get(method)


def main() -> None:
    log = open(sys.argv[1], "a", encoding="utf-8")  # noqa: SIM115 (open for the process's life)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        params = message.get("params") or {}
        log.write(f"{method} {_target(method, params)}".strip() + "\n")
        log.flush()
        result = _answer(method, params)
        if result is None:
            error = {"code": -32601, "message": f"no method {method}"}
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}), flush=True)


if __name__ == "__main__":
    main()
