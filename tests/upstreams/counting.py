"""A handshake-era upstream that writes down every request it receives.

Usage: `counting.py LOG`. Each request's method (and tool name, for `tools/call`) is
appended to LOG and flushed before the answer is sent, so once a client has an answer the
line is on disk. Tool: `touch()` answers "touched".
"""

import json
import sys

TOOLS = [
    {
        "name": "touch",
        "description": "Touch the counter: record one call",
        "inputSchema": {"type": "object", "properties": {}},
    }
]


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
        log.write(f"{method} {params.get('name', '')}".strip() + "\n")
        log.flush()
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "counting", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "touched"}], "isError": False}
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}), flush=True)


if __name__ == "__main__":
    main()
