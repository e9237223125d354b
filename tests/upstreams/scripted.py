"""A hand-written handshake-era upstream whose behaviour the tests control.

It answers `initialize`, `tools/list` (over several pages) and a few tools, and ignores
every other request, `server/discover` included, as some older servers do. Tools:
`env` returns its environment, `fail` answers a JSON-RPC error with a custom code, `hang`
never answers, `cancelled` returns the request ids cancelled so far.
"""

import json
import os
import sys

TOOLS = [
    {"name": name, "description": f"the {name} tool", "inputSchema": {"type": "object"}}
    for name in ("env", "fail", "hang", "cancelled", "extra_1", "extra_2")
]
PAGE_SIZE = 2
cancelled: list[object] = []


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request_id: object, value: dict[str, object]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def text(request_id: object, content: str) -> None:
    result(request_id, {"content": [{"type": "text", "text": content}], "isError": False})


def handle(message: dict[str, object]) -> None:
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    assert isinstance(params, dict)
    if method == "notifications/cancelled":
        cancelled.append(params.get("requestId"))
    elif method == "initialize":
        result(
            request_id,
            {
                "protocolVersion": "2024-11-05",
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "scripted", "version": "1.0"},
                "instructions": "A scripted upstream for tests.",
            },
        )
    elif method == "tools/list":
        start = int(params.get("cursor") or 0)
        page: dict[str, object] = {"tools": TOOLS[start : start + PAGE_SIZE]}
        if start + PAGE_SIZE < len(TOOLS):
            page["nextCursor"] = str(start + PAGE_SIZE)
        result(request_id, page)
    elif method == "tools/call":
        name = params.get("name")
        if name == "env":
            text(request_id, json.dumps(dict(os.environ)))
        elif name == "fail":
            error = {"code": -32042, "message": "scripted failure"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif name == "cancelled":
            text(request_id, json.dumps(cancelled))
        # `hang` and the extras never answer


def main() -> None:
    print("scripted upstream ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


if __name__ == "__main__":
    main()
