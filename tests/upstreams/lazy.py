"""A handshake-era upstream that says when it runs, for the lazy-start tests.

Usage: `lazy.py STATE_DIR`. On start it appends its pid to STATE_DIR/pids (flushed before it
reads a request), then exits with status 3 if STATE_DIR/broken exists: a server that no
longer starts. Its tools are read from STATE_DIR/tools.json at start, a list of
`{"name", "description"}` (default: one tool, `ping_me`); each takes `text` and answers
"NAME from PID: TEXT", after appending "NAME TEXT" to STATE_DIR/calls (so a test sees which
calls ran). The command line stays the same whatever the files say, so the router's cached
listing of it stays valid while its tools change.
"""

import json
import os
import sys
from pathlib import Path

DEFAULT = [{"name": "ping_me", "description": "Answer with the server's process id."}]


def main() -> None:
    state = Path(sys.argv[1])
    with (state / "pids").open("a", encoding="utf-8") as pids:
        pids.write(f"{os.getpid()}\n")
    if (state / "broken").exists():
        print("lazy.py: broken on purpose", file=sys.stderr, flush=True)
        raise SystemExit(3)
    listed = state / "tools.json"
    specs = json.loads(listed.read_text(encoding="utf-8")) if listed.exists() else DEFAULT
    tools = [
        {
            "name": spec["name"],
            "description": spec["description"],
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
        for spec in specs
    ]
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "lazy", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            text = (params.get("arguments") or {}).get("text", "")
            with (state / "calls").open("a", encoding="utf-8") as calls:
                calls.write(f"{params.get('name')} {text}\n")
            answer = f"{params.get('name')} from {os.getpid()}: {text}"
            result = {"content": [{"type": "text", "text": answer}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            print(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}), flush=True)


if __name__ == "__main__":
    main()
